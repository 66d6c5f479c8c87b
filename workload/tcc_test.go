package workload

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/protocols/tcc"
)

func TestTCCGeneratorMixAndDistinctKeys(t *testing.T) {
	g, err := NewTCCGenerator(DefaultTCC(), 8)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	writes, n := 0, 20_000
	var sum, sumSq float64
	for range n {
		tx := g.Next(r)
		if tx.Write {
			writes++
		}
		if len(tx.Keys) != 5 {
			t.Fatalf("transaction has %d keys, want 5", len(tx.Keys))
		}
		seen := map[string]bool{}
		for _, k := range tx.Keys {
			if seen[k] {
				t.Fatalf("key %s repeated in %v", k, tx.Keys)
			}
			seen[k] = true
			i, _ := strconv.ParseFloat(strings.TrimPrefix(k, "k"), 64)
			sum += i
			sumSq += i * i
		}
	}
	if frac := float64(writes) / float64(n); math.Abs(frac-0.05) > 0.01 {
		t.Errorf("write fraction %.3f, want 0.05", frac)
	}
	keys := float64(g.Keys())
	mean := sum / float64(5*n)
	sd := math.Sqrt(sumSq/float64(5*n) - mean*mean)
	if math.Abs(mean-keys/2) > 0.01*keys || math.Abs(sd-keys/8) > 0.01*keys {
		t.Errorf("key mean %.0f sd %.0f, want %.0f and %.0f (Normal(K/2, K/8))", mean, sd, keys/2, keys/8)
	}
}

func TestTCCGeneratorPartitionsPerTxn(t *testing.T) {
	cfg := DefaultTCC()
	cfg.PartitionsPerTxn = 3
	g, err := NewTCCGenerator(cfg, 8)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		tx := g.Next(r)
		parts := map[int]bool{}
		for _, k := range tx.Keys {
			parts[tcc.PartitionOf(k, 8)] = true
		}
		if len(parts) != 3 || len(tx.Keys) != 5 {
			t.Fatalf("%v touches %d partitions with %d keys, want 3 and 5", tx.Keys, len(parts), len(tx.Keys))
		}
	}
}

func TestTCCConfigValidate(t *testing.T) {
	bad := []func(*TCC){
		func(c *TCC) { c.KeysPerROT = 0 },
		func(c *TCC) { c.ValueBytes = 0 },
		func(c *TCC) { c.WriteFraction = 1.5 },
		func(c *TCC) { c.Distribution = "zipf" },
		func(c *TCC) { c.SigmaFraction = 0 },
		func(c *TCC) { c.KeysPerPartition = 0 },
	}
	for i, mutate := range bad {
		c := DefaultTCC()
		mutate(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: %+v accepted", i, c)
		}
	}
	if _, err := NewTCCGenerator(DefaultTCC(), 0); err == nil {
		t.Error("0 partitions accepted")
	}
	cfg := DefaultTCC()
	cfg.PartitionsPerTxn = 9
	if _, err := NewTCCGenerator(cfg, 8); err == nil {
		t.Error("9 partitions per transaction of 8 accepted")
	}
}
