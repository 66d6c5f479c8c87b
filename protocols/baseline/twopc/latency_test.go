package twopc

import (
	"testing"

	"github.com/meridian-kv/meridian/internal/swarm"
)

// TestUncontendedLatency is spec §7.4 / §5.6: on aws-helios with exact delays and no client hop,
// an uncontended commit at X takes RTT(X,V) + 78 ms (V 78, O 144, C 156, I 162, S 346), within
// 1 ms. Latency is measured from the commit request, so the reads do not count.
func TestUncontendedLatency(t *testing.T) {
	swarm.CheckLatencies(t, swarm.Uncontended(t, "aws-helios"), "2pc-paxos", map[string]float64{"V": 78, "O": 144, "C": 156, "I": 162, "S": 346})
}

// TestPropertySafety runs the 200-seed randomized swarm (outages, partitions, slow links, loss,
// duplication, reordering): no anomaly, converged replicas, and every transaction finished.
func TestPropertySafety(t *testing.T) {
	swarm.Run(t, "2pc-paxos", "go test ./twopc -run TestPropertySafety")
}
