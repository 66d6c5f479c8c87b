package fastccs

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/protocols/tcc"
)

// The geo extension, "fastccs-geo" (spec G1; NOT in the thesis, whose protocol and evaluation
// cover one datacenter). Every datacenter holds a full partitioned replica running FastCCS for
// its own clients, which stay in their datacenter. Vectors have one entry per (datacenter,
// partition) (Slots). Partition k of datacenter d streams the WOTs it commits, in
// sequence-number order, to partition k of every other datacenter (Replicate, resent until
// acknowledged); the receiver installs them in order, and how far it has applied d's stream is
// its svc entry for (d, k), gossiped inside its datacenter like svc_i[i]. Visibility stays
// ct ≤ svc over the whole vector, which also covers a WOT's dependencies on other datacenters
// (its ct copies the client's entries for them). Versions of a key from several datacenters are
// ordered by rank (Σ ct, origin datacenter, origin sn), so every datacenter agrees on the newest
// one; the replica reports that order to the checker (Replica.VersionOrder).
//
// Guarantees, tested by TestGeoSwarm with the TCC checker under WAN jitter, WAN partitions, cut
// links and crashed partition servers:
//   - Transactional causal consistency across datacenters: a ROT returns an atomic, causally
//     closed snapshot that contains its session's past, whichever datacenter wrote it.
//   - Reads stay in the client's datacenter, never block and take at most two rounds; a WOT
//     commits within its datacenter (no wide-area round trip before the client's answer).
//   - Convergence: once the network heals, every datacenter installs every committed WOT and
//     all agree on each key's newest version. Concurrent writes to a key are ordered by rank,
//     not by wall-clock time.
//   - Availability under a WAN partition: each side keeps serving reads and its own writes;
//     the other side's writes become visible after the partition heals.
//   - A session may move to another datacenter (tcc.Mover, Client.Move; `bench --move-fraction`):
//     it first waits until every partition there covers its clock (spec G1), so it keeps seeing
//     its own writes and everything it saw before. TestGeoSwarm moves clients in two seeds of
//     three; TestGeoMoveWaitsUntilCovered shows that without the wait the checker catches
//     sessions missing their own past.
// Not guaranteed: replication is asynchronous, so a datacenter lost for good before its stream
// reached the others loses the writes it had acknowledged, and a session cannot move to a
// datacenter cut off from where its past was written until the cut heals (the move fails after
// (retries + 1) × tx_timeout and the session stays).

func init() {
	registry.Register("fastccs-geo", registry.Entry{
		Family:      registry.Causal,
		Description: "FastCCS geo extension (spec G1, not in the thesis): a partitioned replica per datacenter, commits streamed to the same partition elsewhere, vectors per (datacenter, partition)",
		New:         NewGeo,
		Codec:       Codec,
		NewClient:   NewGeoClient,
		// Algorithm 1 unchanged: at most two rounds.
		MaxReadRounds:    2,
		SpansDatacenters: true,
		RandomParams:     randomGeoParams,
	})
}

// NewGeo builds a partition of the geo extension: the nodes must give every datacenter of the
// topology the same partitions 0..N−1 (tcc.PartitionedNodes).
func NewGeo(pc protocol.Config, env protocol.Env) (protocol.Replica, error) {
	r, err := newReplica(pc, env)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// NewGeoClient builds a session's library for the geo extension: it talks to its own
// datacenter's partitions only, until it moves (Client.Move).
func NewGeoClient(cfg tcc.ClientConfig) (tcc.Client, error) {
	if cfg.Layout != nil && (cfg.DC < 0 || cfg.DC >= len(cfg.Layout.Node)) {
		return nil, fmt.Errorf("fastccs: client datacenter %d of %d", cfg.DC, len(cfg.Layout.Node))
	}
	return newClient(cfg)
}

// geoState is what a partition keeps for the replication streams.
type geoState struct {
	peers  []protocol.NodeID // this partition's node in every datacenter
	peerDC map[protocol.NodeID]int
	// Outgoing stream: committed WOTs some datacenter has not acknowledged, in sn order, each
	// with the committed sequence number before it; how far each datacenter acknowledged, and
	// when its acknowledgement last progressed or everything unacknowledged was last resent.
	log        []streamed
	last       int64 // the last committed sequence number
	acked      []int64
	sentUpto   []int64 // the Upto of the last message to each datacenter
	behind     []bool  // that message left entries out: fresh commits wait for the next batch
	progressUs []int64
}

type streamed struct {
	prev int64
	tx   ReplicatedTx
}

func newGeoState(layout *tcc.Layout, me protocol.Node, env protocol.Env) *geoState {
	dcs := len(layout.Node)
	g := &geoState{peers: make([]protocol.NodeID, dcs), peerDC: map[protocol.NodeID]int{},
		acked: make([]int64, dcs), sentUpto: make([]int64, dcs), behind: make([]bool, dcs), progressUs: make([]int64, dcs)}
	for dc := range dcs {
		g.peers[dc] = layout.Node[dc][me.Partition]
		if dc != me.DC {
			g.peerDC[g.peers[dc]] = dc
		}
	}
	return g
}

// stream logs freshly committed WOTs and sends them to every other datacenter at once.
func (r *Replica) stream(fresh []*pendingTx) {
	g := r.geo
	first := len(g.log)
	for _, p := range fresh {
		g.log = append(g.log, streamed{prev: g.last, tx: ReplicatedTx{SN: p.sn, Tx: p.id, Writes: p.writes, CT: p.final}})
		g.last = p.sn
	}
	for dc := range g.peers {
		if dc != r.dc && !g.behind[dc] {
			r.sendStream(dc, first)
		}
	}
}

// maxStreamBatch bounds the entries of one Replicate; a longer backlog goes in batches, the next
// one as soon as the previous is acknowledged, and fresh commits join the last batch.
const maxStreamBatch = 1024

// sendStream sends up to maxStreamBatch log entries from index i on (or, if there are none, a
// heartbeat carrying Upto, which lets the receiver cover holes) to datacenter dc. A message
// that leaves entries out claims no more than its last entry.
func (r *Replica) sendStream(dc, i int) {
	g := r.geo
	m := &Replicate{Prev: g.last, Upto: r.svc[r.slot]}
	g.behind[dc] = false
	if i < len(g.log) {
		m.Prev = g.log[i].prev
		end := min(len(g.log), i+maxStreamBatch)
		for _, s := range g.log[i:end] {
			m.Entries = append(m.Entries, s.tx)
		}
		if end < len(g.log) {
			m.Upto, g.behind[dc] = g.log[end-1].tx.SN, true
		}
	}
	g.sentUpto[dc] = m.Upto
	r.env.Send(g.peers[dc], m)
}

// resend sends a datacenter everything it has not acknowledged once its acknowledgements have
// not progressed for geo_resend: a message was lost (the receiver refuses what follows a gap),
// or only holes followed the last commit it heard of.
func (r *Replica) resend() {
	g := r.geo
	now := r.env.NowUs()
	for dc := range g.peers {
		if dc != r.dc && g.acked[dc] < r.svc[r.slot] && now-g.progressUs[dc] >= r.cfg.geoResendUs {
			g.progressUs[dc] = now
			r.sendFromAcked(dc)
		}
	}
}

// sendFromAcked sends datacenter dc what follows its acknowledgement.
func (r *Replica) sendFromAcked(dc int) {
	g := r.geo
	i, _ := slices.BinarySearchFunc(g.log, g.acked[dc]+1, func(s streamed, sn int64) int { return cmp.Compare(s.tx.SN, sn) })
	r.sendStream(dc, i)
}

// onStream handles another datacenter's partition: its stream, or its acknowledgement of ours.
func (r *Replica) onStream(from protocol.NodeID, m protocol.Message) {
	dc, ok := r.geo.peerDC[from]
	if !ok {
		return
	}
	switch m := m.(type) {
	case *Replicate:
		r.onReplicate(dc, m)
	case *ReplicateAck:
		g := r.geo
		if upto := min(m.Upto, r.svc[r.slot]); upto > g.acked[dc] {
			g.acked[dc], g.progressUs[dc] = upto, r.env.NowUs()
			if upto >= g.sentUpto[dc] && upto < r.svc[r.slot] {
				r.sendFromAcked(dc) // the next batch, or holes since the last message
			}
		}
		low := r.svc[r.slot]
		for d, a := range g.acked {
			if d != r.dc {
				low = min(low, a)
			}
		}
		n := 0
		for n < len(g.log) && g.log[n].tx.SN <= low {
			n++
		}
		g.log = slices.Delete(g.log, 0, n)
	}
}

// onReplicate applies datacenter dc's stream in order: nothing if the receiver misses what comes
// before m (a lost message: the origin resends), else the entries it has not applied, then
// Upto. Every entry's versions are installed committed at their rank; the svc entry for the
// origin moves past them. The answer acknowledges how far the stream is applied.
func (r *Replica) onReplicate(dc int, m *Replicate) {
	k := r.slots.Of(dc, r.self)
	if m.Prev <= r.svc[k] && m.Upto >= m.Prev {
		complete := true
		for _, e := range m.Entries {
			if e.SN <= r.svc[k] {
				continue
			}
			if e.SN > m.Upto || len(e.CT) != r.slots.Len() || e.CT[k] != e.SN || !r.validVC(e.CT) || len(e.Writes) == 0 ||
				!r.validKeys(keysOf(e.Writes)) {
				complete = false
				break
			}
			rk := r.rankOf(e.CT, dc, e.SN)
			for _, w := range e.Writes {
				r.install(e.Tx, w.Key, &version{value: w.Value, writer: e.Tx, ct: e.CT, committed: true, rank: rk})
			}
			r.env.Store().Apply(e.Tx, e.Writes)
			r.svc[k] = e.SN
		}
		if complete {
			r.svc[k] = max(r.svc[k], m.Upto)
		}
	}
	r.env.Send(r.geo.peers[dc], &ReplicateAck{Upto: r.svc[k]})
}

func keysOf(ws []txn.Write) []string {
	keys := make([]string, len(ws))
	for i, w := range ws {
		keys[i] = w.Key
	}
	return keys
}
