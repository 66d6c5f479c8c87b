package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-kv/meridian/server/cluster"
	"github.com/meridian-kv/meridian/server/logclient"
)

// TestChariotsMaintainerLostDisk kills a maintainer of a real Chariots cluster with SIGKILL,
// deletes its data directory and starts it again (spec 5.13, our choice: no other node holds
// its ranges, so it must not rejoin as if nothing happened): the node must stop on its own,
// its log naming the problem (it lost its records, restore its data directory), and the other
// maintainer keeps its head of the log. Another cluster of 16 processes costs the default suite
// too much: MERIDIAN_LONG=1 runs it (the scripted TestMaintainerLostDisk runs by default).
func TestChariotsMaintainerLostDisk(t *testing.T) {
	if testing.Short() || os.Getenv("MERIDIAN_LONG") == "" {
		t.Skip("16 real processes: MERIDIAN_LONG=1 runs it")
	}
	t.Parallel()
	cfg, dir := startChariots(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := logclient.Dial(ctx, cfg, cfg.Topology.DCs[0], plaintext)
	if err != nil {
		t.Fatal(err)
	}
	c.SetCallTimeout(4 * time.Second)
	defer c.Close()
	for i := range 40 { // enough for both maintainers' ranges of 10 positions
		if _, err := c.Append(ctx, []byte(fmt.Sprint("a", i)), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	before, err := c.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const victim = "east-maintainer1"
	i, _, err := cfg.Node(victim)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Kill(dir, victim); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cfg.NodeDataDir(i)); err != nil {
		t.Fatal(err)
	}
	startErr := cluster.StartNode(ctx, dir, meridianBinary(t), victim)
	log := &nodeLog{path: filepath.Join(dir, "logs", victim+".log")}
	text := ""
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(text, "lost its records") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		text += log.poll(t)
	}
	if !strings.Contains(text, "lost its records") || !strings.Contains(text, "restore its data directory") {
		t.Fatalf("%s restarted with an empty data directory did not stop naming the problem (start: %v); its log:\n%s", victim, startErr, text)
	}
	t.Logf("%s stopped: %s", victim, lastLine(text, "lost its records"))
	c.SetCallTimeout(time.Second)
	for attempt := 0; ; attempt++ { // a head-of-log query goes to a random maintainer: the stopped one fails
		after, err := c.Head(ctx)
		if err == nil {
			if after.HL < before.HL {
				t.Fatalf("head of the log went from %d back to %d", before.HL, after.HL)
			}
			break
		}
		if attempt == 20 {
			t.Fatalf("no maintainer answers the head of the log: %v", err)
		}
	}
}

// lastLine returns the last line of text containing s.
func lastLine(text, s string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lines[i]
		}
	}
	return ""
}
