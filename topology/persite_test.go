package topology

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestPerSite: aws-3 with 3 nodes per site is 9 datacenters, the nodes of a site 0.5 ms apart
// without jitter, the sites' RTTs and deviations copied, and the result valid.
func TestPerSite(t *testing.T) {
	base, _ := Preset("aws-3")
	if same, err := PerSite(base, 1); err != nil || same != base {
		t.Fatalf("PerSite(1) = %v, %v; want the topology itself", same, err)
	}
	x, err := PerSite(base, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Validate(); err != nil {
		t.Fatal(err)
	}
	if x.Name != "aws-3x3" || x.N() != 9 || x.DCs[0] != "VA_0" || x.DCs[4] != "IE_1" || x.DCs[8] != "TK_2" {
		t.Fatalf("name %s, datacenters %v", x.Name, x.DCs)
	}
	for i := range 9 {
		for j := range 9 {
			wantRTT, wantDev := base.RTTMs[i/3][j/3], base.StdDevMs[i/3][j/3]
			if i/3 == j/3 && i != j {
				wantRTT, wantDev = IntraSiteRTTMs, 0
			}
			if x.RTTMs[i][j] != wantRTT || x.StdDevMs[i][j] != wantDev {
				t.Errorf("%s-%s: RTT %g ± %g, want %g ± %g", x.DCs[i], x.DCs[j], x.RTTMs[i][j], x.StdDevMs[i][j], wantRTT, wantDev)
			}
		}
	}
	for _, n := range []int{0, -1, 22} {
		if _, err := PerSite(base, n); err == nil {
			t.Errorf("PerSite(%d) succeeded", n)
		}
	}
}

// TestMarshalJSONFile: PerSite's aws-3x3 written as a topology file loads back as itself.
func TestMarshalJSONFile(t *testing.T) {
	base, _ := Preset("aws-3")
	x, err := PerSite(base, 3)
	if err != nil {
		t.Fatal(err)
	}
	data, err := x.MarshalJSONFile()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "aws-3x3.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, x) {
		t.Fatalf("loaded %+v\nwant %+v", back, x)
	}
	if _, err := (&Topology{Name: "bad"}).MarshalJSONFile(); err == nil {
		t.Error("an invalid topology was written")
	}
}
