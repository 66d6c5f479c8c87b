package workload

import (
	"math/rand/v2"
	"testing"
)

// TestRowCodec: rows round-trip, an empty value is the initial row, and anything else that is
// not a row of the expected width is refused.
func TestRowCodec(t *testing.T) {
	initial := row{7, -1, 0}
	for _, r := range []row{{0, 0, 0}, {1, -2, 3}, {-9_223_372_036_854_775_808, 9_223_372_036_854_775_807, 42}} {
		got, err := parseRow(r.encode(), initial)
		if err != nil || len(got) != 3 || got[0] != r[0] || got[1] != r[1] || got[2] != r[2] {
			t.Errorf("%v: parsed %v, %v", r, got, err)
		}
	}
	if got, err := parseRow(nil, initial); err != nil || got[0] != 7 || got[1] != -1 {
		t.Errorf("empty value: %v, %v", got, err)
	}
	for _, bad := range []string{"1,2", "1,2,3,4", "1,,3", "a,b,c", "1,2,3,", ",1,2", "1 ,2,3", "99999999999999999999,1,2"} {
		if got, err := parseRow([]byte(bad), initial); err == nil {
			t.Errorf("%q parsed as %v", bad, got)
		}
	}
}

// TestTPCCMixes: the write-intensive mix is the spec's; roX gives X% read-only transactions
// split evenly, the rest 45:43:4; weights sum to 100.
func TestTPCCMixes(t *testing.T) {
	for _, tc := range []struct {
		mix    string
		no, os float64
	}{{"write", 49, 1}, {"ro50", 50 * 45.0 / 92, 25}, {"ro90", 10 * 45.0 / 92, 45}, {"ro0", 45 * 100.0 / 92, 0}} {
		c := DefaultTPCC()
		c.Mix = tc.mix
		w, err := c.weights()
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, x := range w {
			sum += x
		}
		if d := sum - 100; d > 1e-9 || d < -1e-9 || w[newOrder] != tc.no || w[orderStatus] != tc.os || w[orderStatus] != w[stockLevel] && tc.mix != "write" {
			t.Errorf("%s: weights %v", tc.mix, w)
		}
	}
	for _, bad := range []string{"", "read", "ro", "ro-1", "ro100.5", "roNaN"} {
		c := DefaultTPCC()
		c.Mix = bad
		if c.Validate() == nil {
			t.Errorf("mix %q accepted", bad)
		}
	}
}

// TestNURand: TPC-C's non-uniform draws stay in [1, n] at every scale.
func TestNURand(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int64{1, 2, 15, 30, 1000, 3000, 100_000} {
		for range 2000 {
			if x := nurand(rng, 8191, 7911, n); x < 1 || x > n {
				t.Fatalf("nurand(%d) = %d", n, x)
			}
		}
	}
}
