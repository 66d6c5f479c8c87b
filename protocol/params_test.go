package protocol

import (
	"slices"
	"strings"
	"testing"
)

func TestParamsDuration(t *testing.T) {
	p := Params{"gt": "500ms", "zero": "0s", "neg": "-2ms", "mixed": "1m30.5s", "bad": "10", "junk": "soon"}
	good := []struct {
		key  string
		def  int64
		want int64
	}{
		{"gt", 7, 500_000},
		{"zero", 7, 0},
		{"neg", 7, -2000},
		{"mixed", 7, 90_500_000},
		{"absent", 1234, 1234},
	}
	for _, c := range good {
		got, err := p.Duration(c.key, c.def)
		if err != nil || got != c.want {
			t.Errorf("Duration(%q) = %d, %v; want %d", c.key, got, err, c.want)
		}
	}
	for _, key := range []string{"bad", "junk"} {
		_, err := p.Duration(key, 0)
		if err == nil || !strings.Contains(err.Error(), "parameter "+key) || !strings.Contains(err.Error(), p[key]) {
			t.Errorf("Duration(%q) error %v should name the key and the value", key, err)
		}
	}
}

func TestParamsInt(t *testing.T) {
	p := Params{"n": "42", "neg": "-3", "float": "1.5", "empty": "", "word": "many"}
	for _, c := range []struct {
		key       string
		def, want int
	}{{"n", 0, 42}, {"neg", 0, -3}, {"absent", 9, 9}} {
		if got, err := p.Int(c.key, c.def); err != nil || got != c.want {
			t.Errorf("Int(%q) = %d, %v; want %d", c.key, got, err, c.want)
		}
	}
	for _, key := range []string{"float", "empty", "word"} {
		if _, err := p.Int(key, 0); err == nil || !strings.Contains(err.Error(), "parameter "+key+":") {
			t.Errorf("Int(%q) error %v should name the key", key, err)
		}
	}
}

func TestParamsBool(t *testing.T) {
	p := Params{"t": "true", "one": "1", "f": "false", "F": "F", "yes": "yes"}
	for _, c := range []struct {
		key       string
		def, want bool
	}{{"t", false, true}, {"one", false, true}, {"f", true, false}, {"F", true, false}, {"absent", true, true}, {"absent", false, false}} {
		if got, err := p.Bool(c.key, c.def); err != nil || got != c.want {
			t.Errorf("Bool(%q, %v) = %v, %v; want %v", c.key, c.def, got, err, c.want)
		}
	}
	if _, err := p.Bool("yes", false); err == nil || !strings.Contains(err.Error(), "parameter yes:") {
		t.Errorf("Bool(yes) error %v should name the key", err)
	}
}

func TestParamsFloats(t *testing.T) {
	p := Params{"l": "3,5", "spaced": " 1.5 , -2,1e3 ", "one": "7", "hole": "1,,2", "word": "1,two", "empty": ""}
	for _, c := range []struct {
		key  string
		want []float64
	}{
		{"l", []float64{3, 5}},
		{"spaced", []float64{1.5, -2, 1000}},
		{"one", []float64{7}},
		{"absent", nil},
	} {
		got, err := p.Floats(c.key)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Floats(%q) = %v, %v; want %v", c.key, got, err, c.want)
		}
	}
	for _, c := range []struct{ key, bad string }{{"hole", `""`}, {"word", `"two"`}, {"empty", `""`}} {
		got, err := p.Floats(c.key)
		if err == nil || got != nil || !strings.Contains(err.Error(), "parameter "+c.key+":") || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("Floats(%q) = %v, %v; want an error naming the key and %s", c.key, got, err, c.bad)
		}
	}
}

func TestParamsCheckKnown(t *testing.T) {
	known := []string{"gt", "interval"}
	prefixes := []string{"lat", "co"}
	for _, ok := range []Params{
		nil,
		{},
		{"gt": "1ms"},
		{"gt": "1ms", "interval": "5ms", "lat.V": "3", "co.O": "1", "lat.some-dc": "2"},
	} {
		if err := ok.CheckKnown(known, prefixes); err != nil {
			t.Errorf("CheckKnown(%v) = %v", ok, err)
		}
	}
	for _, c := range []struct {
		p    Params
		name string
	}{
		{Params{"gtt": "1"}, "gtt"},
		{Params{"lat": "1"}, "lat"},   // a prefix alone is not a parameter
		{Params{"latV": "1"}, "latV"}, // the dot is required
		{Params{"x.lat.V": "1"}, "x.lat.V"},
		{Params{"zeta": "1", "alpha": "2", "gt": "3"}, "alpha"}, // the first unknown in sorted order
	} {
		err := c.p.CheckKnown(known, prefixes)
		if err == nil {
			t.Errorf("CheckKnown(%v) accepted it", c.p)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, `unknown parameter "`+c.name+`"`) {
			t.Errorf("CheckKnown(%v) = %q, want it to name %q", c.p, msg, c.name)
		}
		for _, want := range []string{"gt", "interval", "lat.<DC>", "co.<DC>"} {
			if !strings.Contains(msg, want) {
				t.Errorf("CheckKnown error %q does not list known parameter %s", msg, want)
			}
		}
	}
	// CheckKnown must not modify the caller's slices.
	k := make([]string, 2, 10)
	copy(k, known)
	_ = Params{"nope": ""}.CheckKnown(k, prefixes)
	if !slices.Equal(k, known) || !slices.Equal(k[:4], append(slices.Clone(known), "", "")) {
		t.Errorf("CheckKnown modified its known slice: %q", k[:4])
	}
}
