package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
)

// TestFLStoreKillMaintainer runs standalone FLStore as real processes in one datacenter (two
// maintainers owning ranges of 100 positions, an indexer): two clients append to random
// maintainers while one maintainer is killed with SIGKILL and restarted. Every acknowledged
// append must then be in the log once, at the position its acknowledgement named, and the head
// of the log must reach the last one (the no-op fill moves it past the ranges left idle).
func TestFLStoreKillMaintainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	bin := meridianBinary(t)
	dir := t.TempDir()
	topo, topoFile := oneDCTopology(t, dir)
	e, err := registry.Lookup("flstore")
	if err != nil {
		t.Fatal(err)
	}
	// The head of the log passes the ranges the killed maintainer did not fill while it was down
	// one range per noop_after (spec A6), so after the restart it catches up at 10,000
	// positions a second.
	params := protocol.Params{"maintainers": "2", "b": "100", "noop_after": "10ms", "gossip": "5ms"}
	nodes, err := e.Nodes(params, 1)
	if err != nil {
		t.Fatal(err)
	}
	roles, err := e.Roles(params, 1)
	if err != nil {
		t.Fatal(err)
	}
	gen := cluster.GenerateNamed(topo, topoFile, "flstore", dir, freeBasePort(t, len(nodes)), nodes, roles)
	gen.Params = params
	gen.CheckpointBytes = 2 << 10
	cfg := bringUp(t, gen, dir, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	type ack struct {
		body string
		lid  uint64
	}
	var (
		mu    sync.Mutex
		acks  []ack
		fails int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		c, err := logclient.Dial(ctx, cfg, "", plaintext)
		if err != nil {
			t.Fatal(err)
		}
		c.SetCallTimeout(time.Second)
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf("c%d-%d", i, n)
				res, err := c.Append(ctx, []byte(body), nil, nil)
				mu.Lock()
				if err != nil {
					fails++
				} else {
					acks = append(acks, ack{body, res.LId})
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond) // its maintainer is down: the next append tries another
				}
			}
		}()
	}
	const victim = "dc0-maintainer1"
	time.Sleep(time.Second)
	if err := cluster.Kill(dir, victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cluster.StartNode(ctx, dir, bin, victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d appends acknowledged, %d not", len(acks), fails)
	if len(acks) == 0 {
		t.Fatal("no append acknowledged")
	}
	last := uint64(0)
	for _, a := range acks {
		last = max(last, a.lid)
	}
	c, err := logclient.Dial(ctx, cfg, "", plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		h, err := c.Head(ctx)
		if err == nil && h.HL >= last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the head of the log (%v, %v) never reached the last acknowledged position %d", h.HL, err, last)
		}
	}
	recs, err := c.Read(ctx, 1, last)
	if err != nil {
		t.Fatal(err)
	}
	at := map[uint64]string{}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[string(r.Body)] {
			t.Fatalf("%q is in the log twice", r.Body)
		}
		seen[string(r.Body)], at[r.LId] = true, string(r.Body)
	}
	for _, a := range acks {
		if at[a.lid] != a.body {
			t.Fatalf("append %q was acknowledged at position %d, which holds %q", a.body, a.lid, at[a.lid])
		}
	}
}
