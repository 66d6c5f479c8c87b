package topology

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Topology is a set of datacenters and the symmetric RTT matrix between them. Matrices are indexed
// in the order of DCs. A valid Topology (see Validate) has n ≥ 1 datacenters and two n×n
// matrices with a zero diagonal.
type Topology struct {
	// Name identifies the topology in logs and reports (a preset name or a file's name field).
	Name string
	// DCs are the datacenter names, unique, in matrix order.
	DCs []string
	// RTTMs[i][j] is the mean round-trip time between DCs[i] and DCs[j] in milliseconds.
	RTTMs [][]float64
	// StdDevMs[i][j] is the standard deviation of that round trip in milliseconds; all zero
	// means no jitter.
	StdDevMs [][]float64
}

// N returns the number of datacenters.
func (t *Topology) N() int { return len(t.DCs) }

// Index returns the matrix index of the datacenter called name.
func (t *Topology) Index(name string) (int, bool) {
	for i, dc := range t.DCs {
		if dc == name {
			return i, true
		}
	}
	return 0, false
}

// MaxRTTMs returns the largest RTT from datacenter index dc to any other datacenter (the spec's
// RTT^dc_max), or 0 if the topology has a single datacenter. It panics if dc is out of range.
func (t *Topology) MaxRTTMs(dc int) float64 {
	var m float64
	for _, v := range t.RTTMs[dc] {
		m = max(m, v)
	}
	return m
}

// matrix names one of the two matrices in error messages, using the file format's key so that
// in-memory and file topologies report problems the same way.
type matrix struct {
	key  string // file-format key, e.g. "rtt_ms"
	what string // what one entry is, e.g. "RTT"
}

var (
	rttMatrix    = matrix{key: "rtt_ms", what: "RTT"}
	stdDevMatrix = matrix{key: "stddev_ms", what: "std dev"}
)

// Validate checks that t is well formed: at least one datacenter, valid and unique names, n×n
// RTTMs and StdDevMs with a zero diagonal, and finite, non-negative, symmetric entries. Error
// messages name the offending entry using the file format's keys (datacenters, rtt_ms,
// stddev_ms). If t is valid, Validate returns one warning per triple of datacenters a, b, c with
// RTT(a,c) > RTT(a,b) + RTT(b,c) + 1e-9; measured topologies may legitimately have such triples.
func (t *Topology) Validate() (warnings []string, err error) {
	if err := validateNames(t.DCs); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		m      matrix
		values [][]float64
	}{{rttMatrix, t.RTTMs}, {stdDevMatrix, t.StdDevMs}} {
		if err := t.validateMatrix(c.m, c.values); err != nil {
			return nil, err
		}
	}
	return t.triangleWarnings(), nil
}

// validateNames checks the datacenter list; it is shared with the file loader, which needs unique
// names before it can resolve rtt_ms keys.
func validateNames(dcs []string) error {
	switch {
	case len(dcs) == 0:
		return errors.New("datacenters: no datacenters")
	case len(dcs) > MaxDatacenters:
		return fmt.Errorf("datacenters: %d datacenters, at most %d", len(dcs), MaxDatacenters)
	}
	seen := make(map[string]bool, len(dcs))
	for i, dc := range dcs {
		switch {
		case dc == "":
			return fmt.Errorf("datacenters[%d]: empty name", i)
		case !validName(dc):
			return fmt.Errorf("datacenters[%d]: invalid name %q (use ASCII letters, digits, '-' and '_')", i, dc)
		case seen[dc]:
			return fmt.Errorf("datacenters[%d]: duplicate name %q", i, dc)
		}
		seen[dc] = true
	}
	return nil
}

func validName(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (t *Topology) validateMatrix(m matrix, values [][]float64) error {
	n := len(t.DCs)
	if len(values) != n {
		return fmt.Errorf("%s: %d rows for %d datacenters", m.key, len(values), n)
	}
	for i, row := range values {
		if len(row) != n {
			return fmt.Errorf("%s: row %s has %d entries for %d datacenters", m.key, t.DCs[i], len(row), n)
		}
		if row[i] != 0 {
			return fmt.Errorf("%s: %s→%s is %g, want 0", m.key, t.DCs[i], t.DCs[i], row[i])
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			a, b := t.DCs[i], t.DCs[j]
			for _, v := range []float64{values[i][j], values[j][i]} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > MaxRTTMs {
					return fmt.Errorf("%s: %s between %s and %s is %g, want a number in [0, %d] (ms)",
						m.key, m.what, a, b, v, MaxRTTMs)
				}
			}
			if values[i][j] != values[j][i] {
				return fmt.Errorf("%s: asymmetric %s %s→%s %g vs %s→%s %g",
					m.key, m.what, a, b, values[i][j], b, a, values[j][i])
			}
		}
	}
	return nil
}

// Limits of a topology. MaxDatacenters keeps the lower bound's linear program (one constraint
// per pair of datacenters) within memory: 64 datacenters are more regions than any one cloud
// provider runs. MaxRTTMs, one minute, is far beyond any real round trip, and keeps every delay
// in microseconds, and sums of them, far from overflowing int64.
const (
	MaxDatacenters = 64
	MaxRTTMs       = 60_000
)

// triangleEpsilon absorbs floating-point noise in the triangle-inequality check.
const triangleEpsilon = 1e-9

func (t *Topology) triangleWarnings() []string {
	var warnings []string
	n := t.N()
	for a := range n {
		for c := a + 1; c < n; c++ {
			for b := range n {
				if b == a || b == c {
					continue
				}
				direct, ab, bc := t.RTTMs[a][c], t.RTTMs[a][b], t.RTTMs[b][c]
				if direct > ab+bc+triangleEpsilon {
					warnings = append(warnings, fmt.Sprintf(
						"triangle inequality violated: RTT(%s,%s)=%g > RTT(%s,%s)+RTT(%s,%s)=%g+%g",
						t.DCs[a], t.DCs[c], direct, t.DCs[a], t.DCs[b], t.DCs[b], t.DCs[c], ab, bc))
				}
			}
		}
	}
	return warnings
}

// Subset returns a new topology with only the datacenters dcs, in that order, and the RTTs and
// standard deviations between them copied from t; the MF experiments' scenarios (CO, COV, COVI)
// are subsets of the aws-mf preset. Its name is t's name followed by the list, e.g.
// "aws-mf[C,O,V]". It fails if t is invalid, dcs is empty, or a name is unknown or repeated.
func Subset(t *Topology, dcs []string) (*Topology, error) {
	if _, err := t.Validate(); err != nil {
		return nil, fmt.Errorf("subset of %s: %w", t.Name, err)
	}
	if len(dcs) == 0 {
		return nil, fmt.Errorf("subset of %s: no datacenters", t.Name)
	}
	idx := make([]int, len(dcs))
	for k, dc := range dcs {
		i, ok := t.Index(dc)
		if !ok {
			return nil, fmt.Errorf("subset of %s: unknown datacenter %q", t.Name, dc)
		}
		for _, prev := range dcs[:k] {
			if prev == dc {
				return nil, fmt.Errorf("subset of %s: duplicate datacenter %q", t.Name, dc)
			}
		}
		idx[k] = i
	}
	pick := func(m [][]float64) [][]float64 {
		out := make([][]float64, len(idx))
		for r, i := range idx {
			out[r] = make([]float64, len(idx))
			for c, j := range idx {
				out[r][c] = m[i][j]
			}
		}
		return out
	}
	return &Topology{
		Name:     t.Name + "[" + strings.Join(dcs, ",") + "]",
		DCs:      append([]string(nil), dcs...),
		RTTMs:    pick(t.RTTMs),
		StdDevMs: pick(t.StdDevMs),
	}, nil
}
