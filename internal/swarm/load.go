package swarm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/meridian-kv/meridian/client"
	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/sim"
)

// StartLoad connects clientsPerDC closed-loop clients to the replica of each of the first dcs
// datacenters of s (node dc) and starts them: each runs transactions of one read and one write
// over keys keys, back to back, for as long as the simulation runs. The long-run memory tests of
// the baselines use it. It returns the number of transactions decided (committed or aborted) so
// far, which grows as s runs.
func StartLoad(t testing.TB, s *sim.Sim, dcs, clientsPerDC, keys int) *int {
	t.Helper()
	decided := new(int)
	for dc := range dcs {
		for i := range clientsPerDC {
			id := txn.ClientID(10*dc + i + 1)
			conn, err := s.Connect(id, protocol.NodeID(dc))
			if err != nil {
				t.Fatal(err)
			}
			sess := client.NewSession(conn, id, fmt.Sprint(dc), fmt.Sprint(id), nil)
			rng := rand.New(rand.NewPCG(uint64(id), 1))
			var loop func()
			loop = func() {
				tx := sess.Begin()
				tx.Get(fmt.Sprintf("k%d", rng.IntN(keys)), func([]byte, error) {
					_ = tx.Put(fmt.Sprintf("k%d", rng.IntN(keys)), []byte("v"))
					tx.Commit(func(res client.Result) {
						if res.Status == txn.Committed || res.Status == txn.Aborted {
							*decided++
						}
						loop()
					})
				})
			}
			loop()
		}
	}
	return decided
}
