package loopback

import (
	"context"
	"testing"
	"time"
)

// TestRunCompares runs both systems briefly on loopback (8 clients, 10,000 keys): every phase of
// both commits transactions, and few updates abort. The ratios are logged, not checked: on a
// shared machine half a second decides nothing (the experiment, sdur-x0, runs longer).
func TestRunCompares(t *testing.T) {
	o := Options{Clients: 8, Phase: 700 * time.Millisecond, Warmup: 200 * time.Millisecond, Items: 10_000, Replicas: 3}
	res, err := Run(context.Background(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("S-DUR %+v; single %+v; ratios read %.2f write %.2f", res.SDUR, res.Single, res.ReadRatio(), res.WriteRatio())
	for _, tp := range []Throughput{res.SDUR, res.Single} {
		if tp.ReadTPS <= 0 || tp.WriteTPS <= 0 || tp.WriteAbortRate > 0.05 {
			t.Errorf("throughput %+v", tp)
		}
	}
}
