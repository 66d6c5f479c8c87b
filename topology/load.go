package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meridian-kv/meridian/internal/strictyaml"
)

// Load returns the preset called nameOrPath if there is one, and otherwise reads the topology
// file at that path; the extension (.yaml, .yml or .json, in any case) selects the format. The
// warnings are those of Validate. Errors are single lines naming the file and the entry at fault.
func Load(nameOrPath string) (*Topology, []string, error) {
	if t, ok := Preset(nameOrPath); ok {
		warnings, err := t.Validate()
		return t, warnings, err
	}
	if formatOf(nameOrPath) == "" {
		return nil, nil, fmt.Errorf("topology %q: not a preset (%s) nor a .yaml, .yml or .json file",
			nameOrPath, strings.Join(PresetNames(), ", "))
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		return nil, nil, fmt.Errorf("topology: %w", err)
	}
	return parseFile(nameOrPath, data)
}

// formatOf returns "yaml" or "json" for a supported file extension, else "".
func formatOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return "yaml"
	case ".json":
		return "json"
	}
	return ""
}

// file is the on-disk form. Values are pointers so that an explicit null is reported rather than
// read as 0.
type file struct {
	Name        string                         `yaml:"name" json:"name"`
	Datacenters []string                       `yaml:"datacenters" json:"datacenters"`
	RTTMs       map[string]map[string]*float64 `yaml:"rtt_ms" json:"rtt_ms"`
	StdDevMs    map[string]map[string]*float64 `yaml:"stddev_ms" json:"stddev_ms"`
}

// parseFile decodes and validates the contents of the topology file at path, prefixing any error
// with the path.
func parseFile(path string, data []byte) (*Topology, []string, error) {
	t, warnings, err := parse(path, data)
	if err != nil {
		return nil, nil, fmt.Errorf("topology %s: %w", path, err)
	}
	return t, warnings, nil
}

func parse(path string, data []byte) (*Topology, []string, error) {
	decode := decodeYAML
	if formatOf(path) == "json" {
		decode = decodeJSON
	}
	var f file
	if err := decode(data, &f); err != nil {
		return nil, nil, err
	}
	t, err := f.topology(path)
	if err != nil {
		return nil, nil, err
	}
	warnings, err := t.Validate()
	if err != nil {
		return nil, nil, err
	}
	return t, warnings, nil
}

func decodeYAML(data []byte, f *file) error { return strictyaml.Decode(data, f) }

func decodeJSON(data []byte, f *file) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		return jsonError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("json: unexpected data after the top-level object")
	}
	// encoding/json silently keeps the last of repeated keys; yaml.v3 rejects them, and so do we.
	return jsonDuplicateKey(data)
}

// jsonError gives encoding/json's errors a "json:" prefix where they lack one and a line number
// where they carry an offset.
func jsonError(data []byte, err error) error {
	line := func(offset int64) int {
		return 1 + bytes.Count(data[:min(offset, int64(len(data)))], []byte("\n"))
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == io.EOF:
		return errors.New("json: empty file")
	case err == io.ErrUnexpectedEOF:
		return errors.New("json: unexpected end of file")
	case errors.As(err, &syn):
		return fmt.Errorf("json: line %d: %w", line(syn.Offset), err)
	case errors.As(err, &typ):
		return fmt.Errorf("json: line %d: %s", line(typ.Offset), strings.TrimPrefix(err.Error(), "json: "))
	}
	return err
}

// jsonDuplicateKey reports the first object key that occurs twice in the same object of data,
// which must be valid JSON.
func jsonDuplicateKey(data []byte) error {
	type frame struct {
		keys    map[string]bool // nil for arrays
		wantKey bool            // the next token in this object is a key or '}'
		path    string
		lastKey string
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	stack := []*frame{{}}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return jsonError(data, err)
		}
		top := stack[len(stack)-1]
		if top.wantKey {
			if key, ok := tok.(string); ok {
				if top.keys[key] {
					if top.path == "" {
						return fmt.Errorf("json: duplicate key %q", key)
					}
					return fmt.Errorf("json: duplicate key %q in %s", key, top.path)
				}
				top.keys[key], top.lastKey, top.wantKey = true, key, false
				continue
			}
		}
		path := top.path
		if top.keys != nil {
			path = strings.TrimPrefix(path+"."+top.lastKey, ".")
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true, path: path})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{path: path + "[]"})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value (scalar or just-closed container) is complete: its parent object wants a key.
		if parent := stack[len(stack)-1]; parent.keys != nil {
			parent.wantKey = true
		}
	}
}

// topology converts a decoded file into a Topology, reporting entries that name unknown
// datacenters, map a datacenter to itself or have no value, and RTT pairs given in neither
// direction. Value and symmetry checks are left to Validate.
func (f *file) topology(path string) (*Topology, error) {
	if err := validateNames(f.Datacenters); err != nil {
		return nil, err
	}
	t := &Topology{
		Name: f.Name,
		DCs:  f.Datacenters,
	}
	if t.Name == "" {
		base := filepath.Base(path)
		t.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	var rttSet [][]bool
	var err error
	if t.RTTMs, rttSet, err = t.fill(rttMatrix, f.RTTMs); err != nil {
		return nil, err
	}
	if t.StdDevMs, _, err = t.fill(stdDevMatrix, f.StdDevMs); err != nil {
		return nil, err
	}
	for i := range t.N() {
		for j := i + 1; j < t.N(); j++ {
			if !rttSet[i][j] {
				return nil, fmt.Errorf("rtt_ms: missing RTT between %s and %s", t.DCs[i], t.DCs[j])
			}
		}
	}
	return t, nil
}

// fill builds the matrix m from the file's entries: a pair given in one direction is mirrored; a
// pair given in both keeps both values so that Validate can report asymmetry. set[i][j] records
// whether the unordered pair {i, j} was given.
func (t *Topology) fill(m matrix, entries map[string]map[string]*float64) (
	values [][]float64, set [][]bool, err error,
) {
	values = zeros(t.N())
	set = make([][]bool, t.N())
	for i := range set {
		set[i] = make([]bool, t.N())
	}
	for _, from := range slices.Sorted(maps.Keys(entries)) {
		i, ok := t.Index(from)
		if !ok {
			return nil, nil, fmt.Errorf("%s: unknown datacenter %q", m.key, from)
		}
		for _, to := range slices.Sorted(maps.Keys(entries[from])) {
			j, ok := t.Index(to)
			switch {
			case !ok:
				return nil, nil, fmt.Errorf("%s: %s: unknown datacenter %q", m.key, from, to)
			case i == j:
				return nil, nil, fmt.Errorf("%s: %s→%s: a datacenter has no %s to itself", m.key, from, to, m.what)
			case entries[from][to] == nil:
				return nil, nil, fmt.Errorf("%s: %s→%s: missing value", m.key, from, to)
			}
			v := *entries[from][to]
			values[i][j] = v
			if !set[i][j] { // first direction seen: mirror it
				values[j][i] = v
			}
			set[i][j], set[j][i] = true, true
		}
	}
	return values, set, nil
}
