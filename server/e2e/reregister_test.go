package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/rpc"
	"github.com/meridian-kv/meridian/tools/bench"
)

// TestClientsRegisterAgainAfterRestart kills a node with SIGKILL under load and restarts it. The
// restarted node has forgotten its clients; they must register again by themselves, with the
// same client ids, and go on committing there: a bench's clients at the restarted node's
// datacenter commit after the restart, and a client dialled before the crash reads and commits
// with its next transaction id.
func TestClientsRegisterAgainAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel()
	cfg, dir := startCluster(t, "table4.1", "helios-1")
	const victim = "C"
	_, node, err := cfg.Node(victim)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := rpc.DialClient(ctx, node.ClientAddr, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The probe only reads: the bench's checker judges every version the replicas hold by its
	// own history.
	commit := func() (txn.ID, error) {
		tx := c.Begin()
		if _, err := tx.Get(ctx, "probe"); err != nil {
			return tx.ID(), err
		}
		res, err := tx.Commit(ctx)
		if err == nil && res.Status != txn.Committed {
			t.Logf("%s aborted: %s", tx.ID(), res.Reason)
		}
		return tx.ID(), err
	}
	if _, err := commit(); err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		res *bench.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		opts := workloadOptions(8 * time.Second)
		opts.KeepHistory = true
		res, err := bench.RunCluster(context.Background(), opts, cfg, nil)
		done <- outcome{res, err}
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := cluster.Kill(dir, victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := cluster.StartNode(ctx, dir, meridianBinary(t), victim); err != nil {
		t.Fatal(err)
	}
	restartedUs := time.Now().UnixMicro()

	// The client dialled before the crash: a call may still meet the broken connection
	// (Unavailable) until gRPC reconnects, but never a node that does not know the client.
	var id txn.ID
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if id, err = commit(); err == nil {
			break
		}
		if strings.Contains(err.Error(), "unknown client id") || time.Now().After(deadline) {
			t.Fatalf("commit of %s after the restart: %v", id, err)
		}
	}
	if id.Client() != c.ID() {
		t.Fatalf("transaction %s after the restart, want one of client %d", id, c.ID())
	}

	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	after := 0
	for _, tx := range o.res.History.Txns {
		if tx.DC == victim && tx.Status == txn.Committed && o.res.OriginUnixUs+tx.StartUs > restartedUs {
			after++
		}
	}
	t.Logf("%d transactions of %s's clients committed after its restart; checker: %s", after, victim, o.res.Checker.Summary())
	if after == 0 {
		t.Fatalf("the clients of %s committed nothing after it restarted", victim)
	}
	if !o.res.Checker.OK {
		t.Fatalf("checker: %s", o.res.Checker.Summary())
	}
}
