package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func mustGenerator(t testing.TB, cfg TYCSB) *Generator {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestDefaultConfig(t *testing.T) {
	want := TYCSB{Keys: 50_000, Distribution: DistZipfian, Theta: 0.99, OpsPerTxn: 5, ReadRatio: 0.5}
	c := DefaultTYCSB()
	if c != want {
		t.Errorf("DefaultTYCSB() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("DefaultTYCSB().Validate() = %v", err)
	}
}

func TestKeyName(t *testing.T) {
	for i, want := range map[uint64]string{0: "k0", 7: "k7", 49_999: "k49999"} {
		if got := KeyName(i); got != want {
			t.Errorf("KeyName(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*TYCSB)
		field string // must appear in the error; "" means valid
	}{
		{"zero keys", func(c *TYCSB) { c.Keys = 0 }, "Keys"},
		{"negative keys", func(c *TYCSB) { c.Keys = -3 }, "Keys"},
		{"zero ops", func(c *TYCSB) { c.OpsPerTxn = 0 }, "OpsPerTxn"},
		{"ops above keys", func(c *TYCSB) { c.Keys, c.OpsPerTxn = 4, 5 }, "OpsPerTxn"},
		{"ops equal keys", func(c *TYCSB) { c.Keys, c.OpsPerTxn = 5, 5 }, ""},
		{"negative read ratio", func(c *TYCSB) { c.ReadRatio = -0.1 }, "ReadRatio"},
		{"read ratio above 1", func(c *TYCSB) { c.ReadRatio = 1.1 }, "ReadRatio"},
		{"NaN read ratio", func(c *TYCSB) { c.ReadRatio = math.NaN() }, "ReadRatio"},
		{"read ratio 0", func(c *TYCSB) { c.ReadRatio = 0 }, ""},
		{"read ratio 1", func(c *TYCSB) { c.ReadRatio = 1 }, ""},
		{"unknown distribution", func(c *TYCSB) { c.Distribution = "hotspot" }, "Distribution"},
		{"empty distribution", func(c *TYCSB) { c.Distribution = "" }, "Distribution"},
		{"theta 0", func(c *TYCSB) { c.Theta = 0 }, "Theta"},
		{"theta 1", func(c *TYCSB) { c.Theta = 1 }, "Theta"},
		{"NaN theta", func(c *TYCSB) { c.Theta = math.NaN() }, "Theta"},
		{"uniform ignores theta", func(c *TYCSB) { c.Distribution, c.Theta = DistUniform, 0 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultTYCSB()
			tc.edit(&c)
			err := c.Validate()
			_, genErr := NewGenerator(c)
			switch {
			case tc.field == "" && (err != nil || genErr != nil):
				t.Errorf("Validate() = %v, NewGenerator error = %v; want both nil", err, genErr)
			case tc.field != "" && (err == nil || genErr == nil):
				t.Errorf("Validate() = %v, NewGenerator error = %v; want both non-nil", err, genErr)
			case tc.field != "" && !strings.Contains(err.Error(), tc.field):
				t.Errorf("Validate() = %q, want it to name %s", err, tc.field)
			}
		})
	}
}

func TestGeneratorDeterministic(t *testing.T) {
	for _, dist := range []string{DistZipfian, DistUniform} {
		cfg := DefaultTYCSB()
		cfg.Distribution = dist
		g1, g2 := mustGenerator(t, cfg), mustGenerator(t, cfg)
		r1, r2, other := newRand(7), newRand(7), newRand(8)
		differs := false
		for i := range 10_000 {
			a, b, c := g1.Next(r1), g2.Next(r2), g1.Next(other)
			if !slices.Equal(a.Ops, b.Ops) {
				t.Fatalf("%s: transaction %d differs under the same seed: %v vs %v", dist, i, a.Ops, b.Ops)
			}
			differs = differs || !slices.Equal(a.Ops, c.Ops)
		}
		if !differs {
			t.Errorf("%s: seeds 7 and 8 produced identical sequences", dist)
		}
	}
}

// TestGeneratorDistinctKeys covers the default setting and the edge where a transaction must use
// the whole key space, including a scrambled Zipfian that cannot draw some keys at all.
func TestGeneratorDistinctKeys(t *testing.T) {
	r := newRand(9)
	for _, cfg := range []TYCSB{
		DefaultTYCSB(),
		{Keys: 1000, Distribution: DistUniform, OpsPerTxn: 5, ReadRatio: 0.5},
		{Keys: 1, Distribution: DistZipfian, Theta: 0.99, OpsPerTxn: 1, ReadRatio: 0.5},
		{Keys: 5, Distribution: DistUniform, OpsPerTxn: 5, ReadRatio: 0.5},
		{Keys: 5, Distribution: DistZipfian, Theta: 0.99, OpsPerTxn: 5, ReadRatio: 0.5},
		{Keys: 64, Distribution: DistZipfian, Theta: 0.99, OpsPerTxn: 64, ReadRatio: 0.5},
	} {
		g := mustGenerator(t, cfg)
		valid := make(map[string]bool, cfg.Keys)
		for i := range cfg.Keys {
			valid[KeyName(uint64(i))] = true
		}
		for range 2000 {
			spec := g.Next(r)
			if len(spec.Ops) != cfg.OpsPerTxn {
				t.Fatalf("%+v: %d ops, want %d", cfg, len(spec.Ops), cfg.OpsPerTxn)
			}
			seen := make(map[string]bool, len(spec.Ops))
			for _, op := range spec.Ops {
				if !valid[op.Key] {
					t.Fatalf("%+v: key %q outside the key space", cfg, op.Key)
				}
				if seen[op.Key] {
					t.Fatalf("%+v: key %q repeated in %v", cfg, op.Key, spec.Ops)
				}
				seen[op.Key] = true
			}
		}
	}
}

// TestGeneratorReadRatio counts reads over 5e5 operations. For p = 0.5 the standard error of
// the fraction is sqrt(0.25/5e5) ≈ 0.0007, so ±0.005 is about 7σ; ratios 0 and 1 are exact.
func TestGeneratorReadRatio(t *testing.T) {
	r := newRand(10)
	for _, ratio := range []float64{0, 0.2, 0.5, 1} {
		cfg := DefaultTYCSB()
		cfg.ReadRatio = ratio
		g := mustGenerator(t, cfg)
		reads, ops := 0, 0
		for range 100_000 {
			for _, op := range g.Next(r).Ops {
				ops++
				if op.Read {
					reads++
				}
			}
		}
		if got := float64(reads) / float64(ops); math.Abs(got-ratio) > 0.005 || (ratio == 0 || ratio == 1) && got != ratio {
			t.Errorf("ReadRatio %v: read fraction %.4f", ratio, got)
		}
	}
}

// TestGeneratorHotKey checks that the default workload is skewed towards the scrambled position of
// Zipfian rank 0, drawn with p = 1/zeta(10^10, 0.99) ≈ 0.0378 per draw. A transaction holds it at
// most once, so its share of operations is about P(transaction holds it)/5 = (1-(1-p)^5)/5 ≈
// 0.0351. Over 1e5 transactions the standard error of the share is about 0.0003, so
// [0.033, 0.037] is a wide band.
func TestGeneratorHotKey(t *testing.T) {
	g := mustGenerator(t, DefaultTYCSB())
	r := newRand(11)
	counts := make(map[string]int)
	ops := 0
	for range 100_000 {
		for _, op := range g.Next(r).Ops {
			counts[op.Key]++
			ops++
		}
	}
	hot := KeyName(fnv1a64(0) % 50_000)
	for k, c := range counts {
		if c > counts[hot] {
			t.Fatalf("key %q drawn %d times, more than the expected hottest %q (%d)", k, c, hot, counts[hot])
		}
	}
	if share := float64(counts[hot]) / float64(ops); share < 0.033 || share > 0.037 {
		t.Errorf("hottest key share %.4f, want ≈ 0.035", share)
	}
}

func TestGeneratorNextAllocatesOnlyOps(t *testing.T) {
	g := mustGenerator(t, DefaultTYCSB())
	r := newRand(12)
	if allocs := testing.AllocsPerRun(1000, func() { g.Next(r) }); allocs != 1 {
		t.Errorf("Next allocates %v times per call, want 1 (the Ops slice)", allocs)
	}
}

func BenchmarkGeneratorNext(b *testing.B) {
	for _, dist := range []string{DistZipfian, DistUniform} {
		b.Run(dist, func(b *testing.B) {
			cfg := DefaultTYCSB()
			cfg.Distribution = dist
			g := mustGenerator(b, cfg)
			r := newRand(13)
			b.ReportAllocs()
			for b.Loop() {
				g.Next(r)
			}
		})
	}
}

// TestKeyNames: the generator's names, kept in one array, are KeyName's at every length.
func TestKeyNames(t *testing.T) {
	for _, n := range []uint64{1, 10, 11, 1000, 50_001} {
		names := newKeyNames(n)
		for _, i := range []uint64{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 50_000} {
			if i < n && names.name(i) != KeyName(i) {
				t.Fatalf("n=%d: name(%d) = %q, want %q", n, i, names.name(i), KeyName(i))
			}
		}
	}
}
