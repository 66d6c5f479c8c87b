package protocol

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// UnsafeParamPrefix starts the names of parameters that deliberately break a protocol
// (unsafe_skip_rule1, unsafe_skip_snapshot_check, ...): the negative controls that show the
// checker catches a broken protocol. The simulator accepts them; real clusters refuse them.
const UnsafeParamPrefix = "unsafe_"

// Params are a protocol's named parameters as the user wrote them ("gt" = "500ms"), so that
// cluster files and command-line flags can carry any protocol's settings without the driver
// knowing them. Each protocol parses its own and rejects unknown names.
type Params map[string]string

// Duration parses key as a Go duration ("10ms") and returns it in microseconds, or defUs if the
// key is absent.
func (p Params) Duration(key string, defUs int64) (int64, error) {
	s, ok := p[key]
	if !ok {
		return defUs, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("parameter %s: %q is not a duration (e.g. 10ms)", key, s)
	}
	return d.Microseconds(), nil
}

// Int parses key as an integer, or returns def if absent.
func (p Params) Int(key string, def int) (int, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("parameter %s: %q is not an integer", key, s)
	}
	return v, nil
}

// Bool parses key as a boolean, or returns def if absent.
func (p Params) Bool(key string, def bool) (bool, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("parameter %s: %q is not a boolean", key, s)
	}
	return v, nil
}

// Floats parses key as a comma-separated list of numbers, or returns nil if absent.
func (p Params) Floats(key string) ([]float64, error) {
	s, ok := p[key]
	if !ok {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %q is not a number", key, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// CheckKnown returns an error naming the first parameter (in sorted order) that is neither in
// known nor of the form prefix.X for a prefix in knownPrefixes.
func (p Params) CheckKnown(known []string, knownPrefixes []string) error {
	names := make([]string, 0, len(p))
	for k := range p {
		names = append(names, k)
	}
	sort.Strings(names)
next:
	for _, k := range names {
		for _, n := range known {
			if k == n {
				continue next
			}
		}
		for _, pre := range knownPrefixes {
			if strings.HasPrefix(k, pre+".") {
				continue next
			}
		}
		return fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(append(append([]string{}, known...), prefixed(knownPrefixes)...), ", "))
	}
	return nil
}

func prefixed(prefixes []string) []string {
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		out[i] = p + ".<DC>"
	}
	return out
}
