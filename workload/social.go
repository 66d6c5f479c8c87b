package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-kv/meridian/protocol/txn"
	"github.com/meridian-kv/meridian/protocols/partitioned"
	"github.com/meridian-kv/meridian/protocols/registry"
	"github.com/meridian-kv/meridian/verify/history"
)

// Social is S-DUR's Twitter-like social network (spec sdur.md §7.2) on the PartitionedReadWrite
// family. Users are partitioned: everything about user u lives in u's partition, under three
// keys: producers(u) (whom u follows), consumers(u) (who follows u) and posts(u).
//
//   - Post(u) appends a message to posts(u), keeping the newest PostsKept: always local.
//   - Follow(u, v) adds v to producers(u) and u to consumers(v); v is in another partition with
//     probability FollowRemote (then the transaction is global).
//   - Timeline(u) reads producers(u), then the posts of every producer, and merges the newest
//     TimelinePosts: a global read-only transaction at a snapshot, reading the nearest replicas
//     (the posts in parallel).
//
// The mix is TimelineFraction Timelines, PostFraction Posts, the rest Follows (spec: 85%, 7.5%,
// 7.5%); a client's u is a uniform user of its home partition. The spec's initial state (every
// user with ProducersPerUser producers, half of them in another partition, and PostsKept posts)
// is not loaded: a key still at its initial version reads as that state, derived from the user
// id, so a run needs no loading phase; consumers start empty (no operation reads them but Follow).
type Social struct {
	UsersPerPartition int
	ProducersPerUser  int
	PostsKept         int
	PostBytes         int
	TimelinePosts     int
	TimelineFraction  float64
	PostFraction      float64
	FollowRemote      float64
}

// DefaultSocial is the spec's setting: 100,000 users per partition, 10 producers and 10 posts of
// 140 bytes each, timelines of the 50 newest posts, 85% Timeline, 7.5% Post, 7.5% Follow, half
// of the Follows global.
func DefaultSocial() Social {
	return Social{UsersPerPartition: 100_000, ProducersPerUser: 10, PostsKept: 10, PostBytes: 140, TimelinePosts: 50,
		TimelineFraction: 0.85, PostFraction: 0.075, FollowRemote: 0.5}
}

// Name is "social".
func (s Social) Name() string { return "social" }

// Family is registry.PartitionedReadWrite.
func (s Social) Family() registry.Family { return registry.PartitionedReadWrite }

// ExtraClientsPerDC is 0.
func (s Social) ExtraClientsPerDC() int { return 0 }

// ClientStream is 2·id+1, like micro's.
func (s Social) ClientStream(id txn.ClientID) uint64 { return uint64(id)<<1 | 1 }

// Validate reports the first invalid setting.
func (s Social) Validate() error {
	switch {
	case s.UsersPerPartition < 2 || s.ProducersPerUser < 0 || s.PostsKept < 1 || s.PostBytes < postHeaderBytes || s.TimelinePosts < 1:
		return fmt.Errorf("workload: social needs at least 2 users per partition, 1 post kept and in a timeline, posts of at least %d bytes", postHeaderBytes)
	case s.TimelineFraction < 0 || s.PostFraction < 0 || s.TimelineFraction+s.PostFraction > 1 || s.FollowRemote < 0 || s.FollowRemote > 1:
		return errors.New("workload: social's fractions must be in [0, 1], Timeline and Post together at most 1")
	}
	return nil
}

// The social network's operations, as its figures name them.
const (
	opPost = iota
	opFollowLocal
	opFollowGlobal
	opTimeline
	socialOps
)

var socialOpNames = [socialOps]string{"post", "follow_local", "follow_global", "timeline"}

// SocialMetrics are the social workload's figures (JSON "workload_metrics"): per operation type,
// committed transactions per second, end-to-end latency with its CDF, and the abort rate.
type SocialMetrics struct {
	ThroughputTPS float64             `json:"throughput_tps"`
	Ops           map[string]SocialOp `json:"ops"`
	// TimelinePosts counts the posts all timelines returned (each at most Social.TimelinePosts).
	TimelinePosts int `json:"timeline_posts"`
}

// SocialOp is one operation type's figures.
type SocialOp struct {
	TPS       float64    `json:"tps"`
	Latency   TCCLatency `json:"latency"`
	CDF       []CDFPoint `json:"latency_cdf"`
	AbortRate float64    `json:"abort_rate"`
}

// Violations is empty: the social network has no invariant of its own beyond the checker's.
func (m *SocialMetrics) Violations() []string { return nil }

// NewRun returns the client side of one run.
func (s Social) NewRun(info RunInfo) (Run, error) {
	if info.Placement == nil {
		return nil, fmt.Errorf("workload: social runs on partitioned read-write protocols, not %s", info.Protocol.Name)
	}
	r := &socialRun{cfg: s}
	r.init(info, socialOps)
	return r, nil
}

type socialRun struct {
	placedRun
	cfg           Social
	timelinePosts int // guarded by mu
}

func (r *socialRun) NewClient(ci ClientInfo) (Client, error) {
	sess, err := newPlacedSession(r.info, ci)
	if err != nil {
		return nil, err
	}
	return &socialClient{run: r, sess: sess}, nil
}

func (r *socialRun) Metrics() Metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &SocialMetrics{Ops: map[string]SocialOp{}, TimelinePosts: r.timelinePosts}
	for op, name := range socialOpNames {
		var o SocialOp
		o.TPS, o.Latency, o.CDF, o.AbortRate = r.classFigures(op)
		m.Ops[name] = o
		m.ThroughputTPS += o.TPS
	}
	return m
}

// socialTxn is one drawn operation: op, its user u and (Follow) v.
type socialTxn struct {
	op   int
	u, v socialUser
}

// socialUser is user number n of partition p.
type socialUser struct{ p, n int }

func (u socialUser) String() string { return fmt.Sprintf("%d.%d", u.p, u.n) }

func (u socialUser) key(what string) string {
	return partitioned.Key(u.p, "u"+strconv.Itoa(u.n)+"/"+what)
}

func parseUser(s string) (socialUser, bool) {
	p, n, ok := strings.Cut(s, ".")
	pi, err1 := strconv.Atoi(p)
	ni, err2 := strconv.Atoi(n)
	return socialUser{pi, ni}, ok && err1 == nil && err2 == nil
}

type socialClient struct {
	run  *socialRun
	sess *placedSession
	last socialTxn
}

// draw draws the next operation.
func (c *socialClient) draw(rng *rand.Rand) socialTxn {
	cfg, parts := c.run.cfg, c.run.info.Placement.Partitions()
	t := socialTxn{u: socialUser{c.sess.home, rng.IntN(cfg.UsersPerPartition)}}
	switch x := rng.Float64(); {
	case x < cfg.TimelineFraction:
		t.op = opTimeline
	case x < cfg.TimelineFraction+cfg.PostFraction:
		t.op = opPost
	default:
		t.op, t.v = opFollowLocal, socialUser{c.sess.home, rng.IntN(cfg.UsersPerPartition)}
		if parts > 1 && rng.Float64() < cfg.FollowRemote {
			t.op, t.v.p = opFollowGlobal, (c.sess.home+1+rng.IntN(parts-1))%parts
		}
	}
	return t
}

func (c *socialClient) Next(rng *rand.Rand, done func(Outcome)) {
	c.last = c.draw(rng)
	c.start(c.last, done)
}

// Retry re-runs the last operation.
func (c *socialClient) Retry(done func(Outcome)) { c.start(c.last, done) }

// Abandon records the update transaction whose commit was in flight with an unknown outcome.
func (c *socialClient) Abandon(nowUs int64) { c.sess.abandon(nowUs) }

// start runs t.
func (c *socialClient) start(t socialTxn, done func(Outcome)) {
	r, lib, cfg := c.run, c.sess.lib, c.run.cfg
	var writes []string
	var ops func(id txn.ID, next func(error))
	switch t.op {
	case opTimeline:
		ops = func(_ txn.ID, next func(error)) { c.timeline(t.u, next) }
	case opPost:
		writes = []string{t.u.key("posts")}
		ops = func(_ txn.ID, next func(error)) {
			lib.Read(writes[0], func(v []byte, version txn.ID, err error) {
				if err != nil {
					next(err)
					return
				}
				posts := append(c.posts(t.u, v, version), post(c.sess.ci.Conn.NowUs(), t.u, cfg.PostBytes))
				lib.Write(writes[0], []byte(strings.Join(posts[max(0, len(posts)-cfg.PostsKept):], "\n")), next)
			})
		}
	default:
		writes = []string{t.u.key("producers"), t.v.key("consumers")}
		ops = func(_ txn.ID, next func(error)) {
			chain([]func(func(error)){
				func(next func(error)) { c.addTo(writes[0], t.u, t.v, next) },
				func(next func(error)) { c.addTo(writes[1], t.v, t.u, next) },
			}, next)
		}
	}
	c.sess.run(t.op == opTimeline, writes, ops, func(h *history.Txn, err error) {
		if err == nil {
			r.measure(t.op, h)
		}
		done(Outcome{Status: h.Status, Reason: h.Reason, Err: err, LatencyUs: h.EndUs - h.StartUs, Ops: len(h.Reads) + len(writes)})
	})
}

// addTo reads the user list key of user owner and writes it back with who added.
func (c *socialClient) addTo(key string, owner, who socialUser, next func(error)) {
	c.sess.lib.Read(key, func(v []byte, version txn.ID, err error) {
		if err != nil {
			next(err)
			return
		}
		users := c.users(owner, key, v, version)
		if !slices.Contains(users, who.String()) {
			users = append(users, who.String())
		}
		c.sess.lib.Write(key, []byte(strings.Join(users, ",")), next)
	})
}

// timeline reads u's producers, then every producer's posts in parallel, and merges the newest.
func (c *socialClient) timeline(u socialUser, next func(error)) {
	lib, cfg := c.sess.lib, c.run.cfg
	key := u.key("producers")
	lib.Read(key, func(v []byte, version txn.ID, err error) {
		if err != nil {
			next(err)
			return
		}
		producers := c.users(u, key, v, version)
		if len(producers) == 0 {
			next(nil)
			return
		}
		var merged []string
		left, failed := len(producers), error(nil)
		for _, p := range producers {
			pu, _ := parseUser(p)
			lib.Read(pu.key("posts"), func(v []byte, version txn.ID, err error) {
				if err != nil && failed == nil {
					failed = err
				}
				merged = append(merged, c.posts(pu, v, version)...)
				if left--; left == 0 {
					slices.Sort(merged) // posts start with their time: the newest are last
					c.run.mu.Lock()
					c.run.timelinePosts += len(merged[max(0, len(merged)-cfg.TimelinePosts):])
					c.run.mu.Unlock()
					next(failed)
				}
			})
		}
	})
}

// users decodes a user list read from key of user owner; the initial version is the initial
// state: ProducersPerUser producers, every other one in the next partition (none for consumers).
func (c *socialClient) users(owner socialUser, key string, v []byte, version txn.ID) []string {
	if version != txn.None {
		if len(v) == 0 {
			return nil
		}
		return strings.Split(string(v), ",")
	}
	if !strings.HasSuffix(key, "/producers") {
		return nil
	}
	cfg, parts := c.run.cfg, c.run.info.Placement.Partitions()
	out := make([]string, cfg.ProducersPerUser)
	for i := range out {
		p := owner.p
		if i%2 == 1 {
			p = (owner.p + 1) % parts
		}
		out[i] = socialUser{p, (owner.n + 1 + i*7919) % cfg.UsersPerPartition}.String()
	}
	return out
}

// posts decodes u's posts; the initial version holds PostsKept posts from time 0.
func (c *socialClient) posts(u socialUser, v []byte, version txn.ID) []string {
	if version != txn.None {
		return strings.Split(string(v), "\n")
	}
	out := make([]string, c.run.cfg.PostsKept)
	for i := range out {
		out[i] = post(int64(i)-int64(len(out)), u, c.run.cfg.PostBytes)
	}
	return out
}

// postHeaderBytes is the size of a post's time and author.
const postHeaderBytes = 40

// post is one message of size bytes by u at atUs: its time first, so that posts sort by time.
func post(atUs int64, u socialUser, size int) string {
	p := fmt.Sprintf("%020d %s ", atUs, u)
	return p + strings.Repeat(".", max(0, size-len(p)))
}
