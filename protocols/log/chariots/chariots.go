// Package chariots is Chariots (seed 000 chapter 7, spec chariots-flstore.md §4–5): a
// geo-replicated, causally ordered shared log. Each datacenter runs FLStore's maintainers
// (package flstore, in Chariots mode) behind a pipeline of independently scaled stages:
// batchers, filters, queues with a circulating token, and senders and receivers between
// datacenters. Every stage is a sans-IO protocol.Replica (see package flstore for the log
// family's shape: roles from a Layout, operations as protocol.Operation requests).
//
// # Where a record goes
//
// A client sends AppendOp to any batcher. The batcher buffers it for the filter championing it
// (a local record: the filter of its client; a record from another datacenter: the filter of
// its host and TOId under the filter map) and flushes on size or timer. The filter forwards
// each record once and, for other datacenters' records, in TOId order per host; it numbers its
// batches to a queue and resends each until acknowledged. The queue holding the token (passed on
// at once after it assigned anything, so that it leaves ahead of the assignments on the
// queue's interface, and held up to the hold time when idle, spec 5.5) assigns
// a local record its TOId and dependency vector (spec A1, A3: the datacenter's knowledge vector)
// and gives any eligible record (next TOId of its host, dependencies logged) the next position,
// sending it to the owner maintainer (Assign, resent until PersistAck). The maintainer persists
// it and answers the client (spec A2) once the head of the log passes it (a token rebuild may
// truncate what is above the head of the log, below). Senders fetch their datacenter's own records from their
// maintainers up to the head of the log and ship them, with their ATable, to a receiver in
// every other datacenter; the receiver hands the records to a batcher and the table to its
// senders.
//
// # Reliability (spec 5.13, A9: the source gives no mechanism; our choices)
//
// Messages may be lost (a crashed stage, a partition), duplicated or reordered. After the
// filter every hop is acknowledged and resent (filter→queue batches, the token, Assign), and
// each receiver deduplicates (batch sequence numbers, token hops, positions). Before the
// filter nothing is acknowledged: a client retries an append it has no answer for (at the next
// batcher of its datacenter, where it then stays: failover; its filter drops the copies by
// client and append number, and the maintainer's answer goes to the batcher that took the copy
// it logged, Record.Via), and a sender ships again
// every record the destination's ATable row does not show after a resend timeout (the filter
// drops the copies by TOId). The token holder publishes its MaxTOId to the senders (RowUpdate);
// the other ATable rows are merged from incoming tables and never copied into the own row
// (spec A4). A queue also refuses a record whose TOId its host already has in the log, so a
// late copy can never be logged twice; local records have no TOId before the token: the filter
// drops their copies, and a queue also drops a copy of a local append already logged (by client
// and append number, Token.Logged). Crashed stages in the simulator keep their state (a
// fail-stop crash with durable state: a real node replays its input log after its checkpoint,
// and a maintainer's records are on its Disk).
//
// # Restarting empty (spec 5.13, our choices)
//
// A stage whose machine and disk are lost restarts with no state (logsim's restart events in
// the swarm; TestStagesRestartEmpty, TestFilterRestartEmpty, TestFilterRestartAfterSplit,
// TestSenderRestartEmpty):
//   - A batcher or a receiver loses what it buffered or what reached it meanwhile: the clients'
//     retries and the senders' resends recover it. Its filter map or batchers revert to the
//     initial ones (a filter map is learnt again, below; any batcher serves a receiver).
//   - A sender starts its ATable from zeros: it fetches and ships its datacenter's records from
//     TOId 1 again (the destinations' filters drop the copies) until the destinations' rows come
//     back in their tables, and learns its own row from the token's next RowUpdate. Its table
//     goes back to zero once; the checker holds it monotone from the restart on (CH-I6 is about
//     what a node knows, and it knows nothing). Maintainers keep the largest garbage-collection
//     horizon they were given, so collection does not go back.
//   - A filter forgets which appends it forwarded, the next TOId of each host, its filter map
//     and added queues. Its batches are numbered under a new incarnation (its clock at start),
//     so the queues take them (they keep the batch numbers of each filter's two newest
//     incarnations, and drop older ones). A client's retry of an append it already forwarded
//     passes it, and the queue holding the token drops it (Token.Logged: per client, the append
//     numbers logged, a contiguous prefix and the numbers above it). Other datacenters' records
//     below what is logged wait in it until the token's row (RowUpdate) moves it past them, as
//     for a filter that became a champion late. A filter that receives a record it does not
//     champion sends its map to the batcher (FilterMapSync); whichever of the two is behind
//     adopts the other's epochs, so a restarted filter or batcher learns a split again. A
//     filter also sends its map to every batcher when it starts, until each has answered with
//     its own: a restarted filter from which a split took records would otherwise never see
//     one it does not champion, and would wait forever for the split filter's.
//   - A queue restarting empty loses the token it may hold, the records it held (already
//     acknowledged to filters, which moved past them) and the assignments no maintainer
//     acknowledged (positions the token passed, which would stay unfilled): the token is
//     rebuilt (below; TestQueueRestartEmpty, TestLastQueueRestartEmpty, the swarm's
//     restart-queue and restart-last-queue events).
//   - A maintainer restarting with its disk lost stops (below).
//
// # Token loss and rebuild (spec 5.13, our choice; rebuild.go)
//
// The network never loses the token: the holder keeps each pass until the next queue
// acknowledges its hop, resending it every retry period, and a queue takes each hop once, so
// lost, duplicated and late passes are harmless (TestTokenPassLost). No queue makes a token at
// start: the coordinator (the first queue of the initial ring) builds it by a rebuild, at start
// and when a queue asks (RebuildReq: every other queue does at start, as it may have restarted
// empty). So the token is lost, and rebuilt, exactly when a queue lost its state, which the
// queue itself announces on starting: nothing that only makes the token late, such as a ring
// saturated with records or a queue cut off or stopped for a while (the ring waits for it),
// triggers a rebuild (rebuild.go says why we have no token timeout, which spec 5.13's
// "missing token heartbeat" suggests; TestHolderRestartOneRebuild, TestTokenHolderCutOff,
// logsim's TestSaturatedRingNoRebuild). A rebuild opens a new generation (the
// coordinator's clock), carried by Token, Assign, PersistAck and RowUpdate, so that the old
// generation's tokens and assignments are dropped wherever they turn up; it freezes the
// maintainers (no assignment taken) and queues (token, passes and unacknowledged assignments
// dropped, the newest token copy handed over), and truncates the log to its stable prefix T,
// the exact head of the log over the frozen maintainers' progress: every position up to T is
// filled. Nothing above T was acknowledged, read, indexed, shipped or published, because all of
// those wait for the head of the log: a maintainer answers an append, sends index entries and
// serves reads and fetches only up to it, and the row the token publishes (RowUpdate, hence
// every ATable) is its row as of StableLId, a head of the log a maintainer reported (PersistAck;
// the token lists its assignments above StableLId, Recent, to tell the row and the logged
// appends as of any later position). Maintainers delete their records above T; the token
// restarts at LastLId = T with the row and logged appends as of T (from the newest copy, or
// the copy plus the maintainers' records between, TruncateAck); filters that see the new
// generation's row reset their next TOIds to it (backwards too) and forget which local appends
// they forwarded, so clients' retries and senders' resends bring back what was truncated, and
// the queues drop what is logged. A truncation below a head of the log already reported is
// refused, by the coordinator and by every maintainer: the datacenter then stays frozen rather
// than drop an answered record. Costs: appends are answered up to a gossip period later than on
// persisting (in the simulator's capacity model the gossip is control plane, not queued behind
// records: logsim.Control); the token carries its unstable assignments, as runs of one
// client's appends (Assigned: about 16 bytes a run, a few dozen runs a pass under
// chariots-t75's load). The rebuild waits for the copies of every queue too: the ring is in the
// token alone, so a rebuild without the newest copy would go back to the initial ring; and a
// queue an elasticity event added says so in its copy (TokenCopy.Added), so the rebuilt ring
// keeps it even when the event reached no surviving token (filters send records to it from the
// event on). Limits: a rebuild waits for every maintainer and queue of the datacenter (spares
// included) to answer; generations are clock readings, so a coordinator whose clock went back
// across a restart opens a generation the maintainers ignore, and stalls; a journal change
// (an added maintainer) applied in the newest token only, held by a queue that restarted empty,
// is lost and must be issued again.
//
// # A maintainer losing its disk (spec 5.13, our choice)
//
// No other node of a datacenter holds a maintainer's ranges (in-datacenter replication of
// maintainers is out of scope), and other datacenters hold copies of its records at other
// positions. So a maintainer that restarts with an empty data directory does not rejoin: the
// first gossip of a peer whose head of the log is at or above its first unfilled position shows
// that it lost records, and it stops (flstore.LogMaintainer.Failure: every request is refused
// with the reason, naming the peer's head of the log; the network server ends the node with it,
// protocol.Failer). Its positions stay unfilled, so the head of the log stops below them:
// appends are persisted but no longer answered, shipped or read past it, and a token rebuild
// refuses to truncate below the head of the log; its data directory must be restored
// (TestMaintainerLostDisk, e2e TestChariotsMaintainerLostDisk with MERIDIAN_LONG=1). A
// maintainer's ranges could be copied from a replica only if one existed; none does.
//
// # Explicit order
//
// A local record with MinLId (spec 3.6) waits at the queue until the log's last position
// reaches MinLId, then gets a position above it (CH-I8, checked in the host's log).
//
// # Elasticity (spec 5.12)
//
// Spare nodes of every role are deployed idle. A batcher joins when receivers (and clients)
// are told (AddBatcher); a filter when batchers and filters get a FilterMapUpdate whose
// FromTOId is in the future (spec A16; a batcher still on the old map reaches a filter that
// drops what it no longer champions, and the sender's resend recovers it); a queue when the
// token holder inserts it after itself in the ring (AddQueue) and filters learn it; a maintainer
// when the token holder starts a new epoch of the journal at the next unassigned position
// (AddMaintainer), which needs no range alignment because the token assigns positions
// contiguously and is the journal's one writer.
package chariots

import (
	"fmt"

	"github.com/meridian-kv/meridian/protocol"
	"github.com/meridian-kv/meridian/protocols/log/flstore"
)

// Roles are the roles of a Chariots deployment, in layout order.
var Roles = []flstore.Role{flstore.Maintainer, flstore.Indexer, flstore.Batcher, flstore.Filter, flstore.Queue,
	flstore.Sender, flstore.Receiver}

// defaultCounts are the active nodes of each role per datacenter by default.
var defaultCounts = map[flstore.Role]int{flstore.Maintainer: 2, flstore.Indexer: 1, flstore.Batcher: 1,
	flstore.Filter: 1, flstore.Queue: 1, flstore.Sender: 1, flstore.Receiver: 1}

// Unsafe parameters: deliberately broken variants for negative controls.
const (
	// UnsafeFilterNoDedupe makes filters forward every copy of a record.
	UnsafeFilterNoDedupe = protocol.UnsafeParamPrefix + "filter_no_dedupe"
	// UnsafeQueueIgnoreDeps makes queues log a record without waiting for its dependencies.
	UnsafeQueueIgnoreDeps = protocol.UnsafeParamPrefix + "queue_ignore_deps"
	// UnsafeQueueIgnoreMinLId makes queues log a record without waiting for its MinLId.
	UnsafeQueueIgnoreMinLId = protocol.UnsafeParamPrefix + "queue_ignore_min_lid"
	// UnsafeAnswerOnPersist makes maintainers answer an append on persisting it, before the
	// head of the log passes it (a token rebuild may then truncate an answered record).
	UnsafeAnswerOnPersist = protocol.UnsafeParamPrefix + "answer_on_persist"
)

// Config is a Chariots node's configuration, parsed from protocol.Params.
type Config struct {
	Layout *flstore.Layout
	DCs    int
	// B is the maintainers' range size.
	B uint64
	// BatchThreshold flushes a batcher's buffer at this many records; FlushUs bounds its wait.
	BatchThreshold int
	FlushUs        int64
	// HoldUs is how long a queue holds the token before passing it.
	HoldUs int64
	// RetryUs is the resend period of unacknowledged batches, tokens and assignments.
	RetryUs int64
	// ShipUs is the senders' period; ResendUs how long a sender waits for a destination's
	// ATable row to move before shipping its records again.
	ShipUs, ResendUs int64
	// FetchMax and CarryMax bound a fetch's records and the token's deferred records.
	FetchMax, CarryMax int
	// RowEveryUs is the longest the token holder goes without publishing MaxTOId.
	RowEveryUs int64
	// GC turns garbage collection at maintainers on; GCKeepLatest (which implies GC) collects
	// only records superseded by a later one with the same tags (flstore.MaintainerConfig).
	GC, GCKeepLatest bool
	// FilterNoDedupe, QueueIgnoreDeps, QueueIgnoreMinLId and AnswerOnPersist are the broken
	// variants.
	FilterNoDedupe, QueueIgnoreDeps, QueueIgnoreMinLId, AnswerOnPersist bool
}

var knownParams = []string{"b", "hl", "gossip", "batch", "flush", "hold", "retry", "ship", "resend", "fetch_max",
	"carry_max", "row_every", "gc", "gc_keep_latest", UnsafeFilterNoDedupe, UnsafeQueueIgnoreDeps, UnsafeQueueIgnoreMinLId, UnsafeAnswerOnPersist}

// ParseConfig reads the parameters of a deployment over dcs datacenters.
func ParseConfig(dcs int, p protocol.Params, maxRTTMs float64) (Config, error) {
	if err := p.CheckKnown(append(flstore.LayoutParams(Roles), knownParams...), nil); err != nil {
		return Config{}, err
	}
	l, err := flstore.LayoutFromParams(dcs, Roles, p, defaultCounts)
	if err != nil {
		return Config{}, err
	}
	c := Config{Layout: l, DCs: dcs}
	mc, err := flstore.MaintainerConfigFromParams(p, l, l.Active(0, flstore.Maintainer)[0], true)
	if err != nil {
		return Config{}, err
	}
	c.B = mc.Journal[0].B
	for _, d := range []struct {
		name string
		dst  *int64
		def  int64
	}{{"flush", &c.FlushUs, 1000}, {"hold", &c.HoldUs, 1000}, {"retry", &c.RetryUs, 20_000}, {"ship", &c.ShipUs, 5000},
		{"resend", &c.ResendUs, int64(3*maxRTTMs*1000) + 50_000}, {"row_every", &c.RowEveryUs, 5000}} {
		if *d.dst, err = p.Duration(d.name, d.def); err != nil {
			return Config{}, err
		}
		if *d.dst <= 0 {
			return Config{}, fmt.Errorf("chariots: parameter %s must be positive", d.name)
		}
	}
	for _, d := range []struct {
		name string
		dst  *int
		def  int
	}{{"batch", &c.BatchThreshold, 100}, {"fetch_max", &c.FetchMax, 1000}, {"carry_max", &c.CarryMax, 1000}} {
		if *d.dst, err = p.Int(d.name, d.def); err != nil {
			return Config{}, err
		}
		if *d.dst < 1 {
			return Config{}, fmt.Errorf("chariots: parameter %s must be at least 1", d.name)
		}
	}
	for _, d := range []struct {
		name string
		dst  *bool
	}{{"gc", &c.GC}, {"gc_keep_latest", &c.GCKeepLatest}, {UnsafeFilterNoDedupe, &c.FilterNoDedupe}, {UnsafeQueueIgnoreDeps, &c.QueueIgnoreDeps},
		{UnsafeQueueIgnoreMinLId, &c.QueueIgnoreMinLId}, {UnsafeAnswerOnPersist, &c.AnswerOnPersist}} {
		if *d.dst, err = p.Bool(d.name, false); err != nil {
			return Config{}, err
		}
	}
	c.GC = c.GC || c.GCKeepLatest
	return c, nil
}

// InitialJournal is datacenter dc's epoch journal at start: its active maintainers.
func (c Config) InitialJournal(dc int) flstore.Journal {
	return flstore.Journal{{StartLId: 1, Maintainers: c.Layout.Active(dc, flstore.Maintainer), B: c.B}}
}

// Factory builds one node of a Chariots deployment: its role comes from the layout the
// parameters describe (see Config and flstore.Layout).
func Factory(cfg protocol.Config, env protocol.Env) (protocol.Replica, error) {
	maxRTT := 0.0
	for _, row := range cfg.Topology.RTTMs {
		for _, v := range row {
			maxRTT = max(maxRTT, v)
		}
	}
	c, err := ParseConfig(cfg.Topology.N(), cfg.Params, maxRTT)
	if err != nil {
		return nil, err
	}
	if err := c.Layout.Check(cfg.Nodes); err != nil {
		return nil, err
	}
	self := cfg.Self
	dc := c.Layout.Nodes[self].DC
	switch c.Layout.Role[self] {
	case flstore.Maintainer:
		mc, err := flstore.MaintainerConfigFromParams(cfg.Params, c.Layout, self, true)
		if err != nil {
			return nil, err
		}
		mc.Queues, mc.DCs, mc.UnsafeAnswerOnPersist = c.Layout.All(dc, flstore.Queue), c.DCs, c.AnswerOnPersist
		if c.GC {
			mc.GCEveryUs, mc.GCKeepLatest = 10*c.ShipUs, c.GCKeepLatest
		}
		return flstore.NewMaintainer(mc, env), nil
	case flstore.Indexer:
		return flstore.NewIndexer(env), nil
	case flstore.Batcher:
		return newBatcher(c, self, dc, env), nil
	case flstore.Filter:
		return newFilter(c, self, dc, env), nil
	case flstore.Queue:
		return newQueue(c, self, dc, env), nil
	case flstore.Sender:
		return newSender(c, self, dc, env), nil
	default:
		return newReceiver(c, dc, env), nil
	}
}

// FilterMap says which filter champions a record (spec 5.3, 5.4): local records by client,
// other datacenters' records by host and TOId, in epochs that FilterMapUpdate extends.
type FilterMap struct {
	Local []protocol.NodeID
	Hosts [][]FilterEpoch
}

// FilterEpoch is one epoch of a host's filter map: from FromTOId on, TOId t goes to
// Filters[t mod len(Filters)].
type FilterEpoch struct {
	FromTOId uint64
	Filters  []protocol.NodeID
}

// initialFilterMap gives every host one filter round robin when there are no more filters than
// datacenters, and otherwise splits each host over the filters j with j mod n = host.
func initialFilterMap(c Config, dc int) *FilterMap {
	fs := c.Layout.Active(dc, flstore.Filter)
	fm := &FilterMap{Local: fs, Hosts: make([][]FilterEpoch, c.DCs)}
	for h := range c.DCs {
		var mine []protocol.NodeID
		if len(fs) <= c.DCs {
			mine = []protocol.NodeID{fs[h%len(fs)]}
		} else {
			for j, f := range fs {
				if j%c.DCs == h {
					mine = append(mine, f)
				}
			}
		}
		fm.Hosts[h] = []FilterEpoch{{FromTOId: 1, Filters: mine}}
	}
	return fm
}

// apply extends the map with u; an update that does not start after the host's last epoch, or
// names no filter, is ignored (a repeat, or malformed).
func (fm *FilterMap) apply(u *FilterMapUpdate) bool {
	if u.Host < 0 || u.Host >= len(fm.Hosts) || len(u.Filters) == 0 {
		return false
	}
	eps := fm.Hosts[u.Host]
	if u.FromTOId <= eps[len(eps)-1].FromTOId {
		return false
	}
	fm.Hosts[u.Host] = append(eps, FilterEpoch{FromTOId: u.FromTOId, Filters: append([]protocol.NodeID(nil), u.Filters...)})
	return true
}

// missing returns, in order, the updates that extend the map to the epochs of hosts it lacks
// (another node's map, FilterMapSync); epochs naming no filter, or nodes not in filters, end
// their host's list.
func (fm *FilterMap) missing(hosts [][]FilterEpoch, filters []protocol.NodeID) []*FilterMapUpdate {
	var us []*FilterMapUpdate
	for h := range min(len(hosts), len(fm.Hosts)) {
		last := fm.Hosts[h][len(fm.Hosts[h])-1].FromTOId
		for _, e := range hosts[h] {
			if len(e.Filters) == 0 || !within(e.Filters, filters) {
				break
			}
			if e.FromTOId > last {
				us = append(us, &FilterMapUpdate{Host: h, FromTOId: e.FromTOId, Filters: e.Filters})
				last = e.FromTOId
			}
		}
	}
	return us
}

// sync returns a FilterMapSync carrying a copy of the map's epochs.
func (fm *FilterMap) sync() *FilterMapSync {
	hosts := make([][]FilterEpoch, len(fm.Hosts))
	for h, eps := range fm.Hosts {
		hosts[h] = append([]FilterEpoch(nil), eps...)
	}
	return &FilterMapSync{Hosts: hosts}
}

// ahead reports whether the map has an epoch that hosts (another node's map) lacks.
func (fm *FilterMap) ahead(hosts [][]FilterEpoch) bool {
	for h, eps := range fm.Hosts {
		if h >= len(hosts) || len(hosts[h]) == 0 || hosts[h][len(hosts[h])-1].FromTOId < eps[len(eps)-1].FromTOId {
			return true
		}
	}
	return false
}

// epochOf returns the index of host h's epoch covering TOId t.
func (fm *FilterMap) epochOf(h int, t uint64) int {
	e := 0
	for i, ep := range fm.Hosts[h] {
		if ep.FromTOId <= t {
			e = i
		}
	}
	return e
}

// Champion returns the filter of record r (local: by client).
func (fm *FilterMap) Champion(r *Record) protocol.NodeID {
	if r.TOId == 0 {
		return fm.Local[uint64(r.Client)%uint64(len(fm.Local))]
	}
	ep := fm.Hosts[r.Host][fm.epochOf(r.Host, r.TOId)]
	return ep.Filters[r.TOId%uint64(len(ep.Filters))]
}

// nextChampioned returns the first TOId ≥ t of host h that filter f champions, or flstore.None.
func (fm *FilterMap) nextChampioned(f protocol.NodeID, h int, t uint64) uint64 {
	eps := fm.Hosts[h]
	for e := fm.epochOf(h, t); e < len(eps); e++ {
		t = max(t, eps[e].FromTOId)
		n := uint64(len(eps[e].Filters))
		best := uint64(flstore.None)
		for i, x := range eps[e].Filters {
			if x != f {
				continue
			}
			// the first u ≥ t with u mod n == i
			u := t - t%n + uint64(i)
			if u < t {
				u += n
			}
			best = min(best, u)
		}
		if best != flstore.None && (e+1 == len(eps) || best < eps[e+1].FromTOId) {
			return best
		}
	}
	return flstore.None
}
