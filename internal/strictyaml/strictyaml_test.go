package strictyaml

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	type doc struct {
		Name string `yaml:"name"`
		N    int    `yaml:"n"`
	}
	for _, tc := range []struct {
		in, wantErr string
	}{
		{"name: a\nn: 3\n", ""},
		{"", ""},
		{"name: a\nextra: 1\n", "field extra not found"},
		{"name: a\n---\nname: b\n", "more than one document"},
		{"n: [1, 2]\nname: [3]\n", "yaml: line 1"},
		{"name: \"a\nb\" \nn: x\n", "yaml:"},
	} {
		var d doc
		err := Decode([]byte(tc.in), &d)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.wantErr)
		case err != nil && strings.ContainsAny(err.Error(), "\n\r"):
			t.Errorf("%q: error spans lines: %q", tc.in, err)
		}
	}
}
