package geo

import (
	"testing"

	"github.com/meridian-kv/meridian/ml/cop"
	"github.com/meridian-kv/meridian/ml/dataset"
)

// BenchmarkAdmitVsPlan compares the central site's admission (transposition) of kdd-like's CI
// training set in 40 batches of 2,500 samples with the sources' planning of the same batches:
// how much work planning at the sources takes off the central site.
//
//	go test ./ml/geo -run '^$' -bench AdmitVsPlan -benchtime 5x -count 3
func BenchmarkAdmitVsPlan(b *testing.B) {
	d, _, err := dataset.KDDLike(dataset.CI).Generate(1, nil)
	if err != nil {
		b.Fatal(err)
	}
	shares, err := Shares(d, Sources)
	if err != nil {
		b.Fatal(err)
	}
	var batches []*Batch
	for s := range Sources {
		for seq := uint64(1); seq <= 10; seq++ {
			bt, err := batchOf(shares[s], s, seq, 2500)
			if err != nil {
				b.Fatal(err)
			}
			batches = append(batches, bt)
		}
	}
	b.Run("plan", func(b *testing.B) {
		for b.Loop() {
			for _, bt := range batches {
				if _, err := NewBatch(bt.Source, bt.Seq, bt.Last, bt.Data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("admit", func(b *testing.B) {
		for b.Loop() {
			var c cop.Central
			for _, bt := range batches {
				if _, err := c.Admit(bt.Plan); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
