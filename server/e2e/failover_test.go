package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
)

// TestChariotsBatcherFailover kills, with SIGKILL and for good, the batcher every client of the
// first datacenter registered with (its first of two) while they append: each client fails over
// to the second batcher with its pending append and its append number (logclient,
// flstore.ClientConfig.Failover) and keeps appending there. Every acknowledged append must be
// in both datacenters' logs exactly once, at the acknowledged position (the Chariots checker:
// CH-I3, each client append once per log), and every client must have appends acknowledged
// after the kill. An append whose first copy got past the batcher before the kill is not
// acknowledged (its answer went to the dead batcher): it fails, and is in the log once.
// Another 18 processes cost the default suite too much: MERIDIAN_LONG=1 runs it (the
// simulator's TestBatcherCrashFailover runs by default, and every real Chariots append takes
// the relay to the batcher that took it).
func TestChariotsBatcherFailover(t *testing.T) {
	if testing.Short() || os.Getenv("MERIDIAN_LONG") == "" {
		t.Skip("18 real processes: MERIDIAN_LONG=1 runs it")
	}
	t.Parallel()
	params := maps.Clone(chariotsParams)
	params["batchers"] = "2"
	batcherFailover(t, params, 3*time.Second)
}

// TestChariotsFailoverPastBatcher is TestChariotsBatcherFailover with the path it leaves to
// chance made certain: maintainers gossip every 200 ms, so an append waits about that long for
// the head of the log (and its answer) after its batcher forwarded it, and the appends in flight
// when the batcher dies have got past it. Their answers go to the dead batcher and their retries
// at the second batcher are dropped as copies by the filter: each call fails, and the client
// finds the append in the log (logclient's findAppend). At least one must have been found, and
// every append must be in the logs once. MERIDIAN_LONG=1 runs it.
func TestChariotsFailoverPastBatcher(t *testing.T) {
	if testing.Short() || os.Getenv("MERIDIAN_LONG") == "" {
		t.Skip("18 real processes: MERIDIAN_LONG=1 runs it")
	}
	t.Parallel()
	params := maps.Clone(chariotsParams)
	params["batchers"], params["gossip"] = "2", "200ms"
	if found := batcherFailover(t, params, 8*time.Second); found == 0 {
		t.Fatal("no append was found in the log after its call failed: the path past the dead batcher was not taken")
	}
}

// batcherFailover runs the failover of TestChariotsBatcherFailover on a cluster with params,
// appending for runAfterKill after the kill, and returns how many appends the clients found in
// the log after their calls failed.
func batcherFailover(t *testing.T, params map[string]string, runAfterKill time.Duration) int {
	t.Helper()
	cfg, dir := startChariotsWith(t, params)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const clientsPerDC, victim = 2, "east-batcher0"
	var clients []*logclient.Client
	for _, name := range cfg.Topology.DCs {
		for range clientsPerDC {
			c, err := logclient.Dial(ctx, cfg, name, plaintext)
			if err != nil {
				t.Fatal(err)
			}
			c.SetCallTimeout(2 * time.Second)
			defer c.Close()
			clients = append(clients, c)
		}
	}
	var (
		mu        sync.Mutex
		acks      []acked
		fails     int
		afterKill = make([]int, len(clients)) // per client, appends acknowledged after the kill
		killedUs  int64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range clients {
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
				callCtx, done := context.WithTimeout(ctx, 5*time.Second)
				res, err := c.Append(callCtx, []byte(body), nil, nil)
				done()
				mu.Lock()
				if err != nil {
					fails++
				} else {
					acks = append(acks, acked{i / clientsPerDC, body, res, time.Now().UnixMicro()})
					if killedUs > 0 {
						afterKill[i]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second)
	mu.Lock()
	killedUs = time.Now().UnixMicro()
	mu.Unlock()
	if err := cluster.Kill(dir, victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(runAfterKill)
	close(stop)
	wg.Wait()
	found := 0
	for _, c := range clients {
		found += c.Found()
	}
	t.Logf("%d appends acknowledged (%d of them found in the log after their calls failed), %d not; acknowledged after killing %s, per client: %v",
		len(acks), found, fails, victim, afterKill)
	for i, n := range afterKill {
		if n == 0 {
			t.Fatalf("client %d (datacenter %s) had no append acknowledged after the kill", i, cfg.Topology.DCs[i/clientsPerDC])
		}
	}

	perDC := make([]*logclient.Client, len(cfg.Topology.DCs))
	for dc := range perDC {
		perDC[dc] = clients[dc*clientsPerDC]
	}
	logs, heads := awaitAcked(ctx, t, perDC, acks, 20*time.Second)
	for _, a := range acks {
		if at := logs[a.dc][a.res.LId-1]; string(at.Body) != a.body || at.TOId != a.res.TOId {
			t.Fatalf("append %q was acknowledged at position %d (TOId %d) of datacenter %d, which holds %q (TOId %d)",
				a.body, a.res.LId, a.res.TOId, a.dc, at.Body, at.TOId)
		}
	}
	checkLogs(t, cfg, logs, heads)
	t.Logf("logs of %d and %d records, each append once; %s stayed down", len(logs[0]), len(logs[1]), victim)
	return found
}
