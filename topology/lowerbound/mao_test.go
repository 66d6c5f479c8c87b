package lowerbound

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// table4_1 is the three-DC example of spec §3.5: RTT(A,B)=30, RTT(A,C)=20, RTT(B,C)=40.
var table4_1 = [][]float64{
	{0, 30, 20},
	{30, 0, 40},
	{20, 40, 0},
}

// table4_2 is the integer reconstruction of Table 4.2 (spec §6.1.2), DC order V, O, C, I, S.
var (
	table4_2Names = []string{"V", "O", "C", "I", "S"}
	table4_2      = [][]float64{
		{0, 66, 78, 84, 268},
		{66, 0, 19, 175, 210},
		{78, 19, 0, 175, 182},
		{84, 175, 175, 0, 194},
		{268, 210, 182, 194, 0},
	}
)

// table4_2Fractional replaces five entries of table4_2 by unrounded means that round to them
// (spec §6.1.3): O–S 209.8, V–S 268.3, V–C 78.3, C–I 175.3, O–I 175.3.
var table4_2Fractional = [][]float64{
	{0, 66, 78.3, 84, 268.3},
	{66, 0, 19, 175.3, 209.8},
	{78.3, 19, 0, 175.3, 182},
	{84, 175.3, 175.3, 0, 194},
	{268.3, 209.8, 182, 194, 0},
}

// table3_1 is the reconstruction of Table 3.1 (spec §6.1.1), DC order C, O, V, I, S.
var table3_1 = [][]float64{
	{0, 21, 86, 159, 173},
	{21, 0, 101, 169, 205},
	{86, 101, 0, 99, 260},
	{159, 169, 99, 0, 341},
	{173, 205, 260, 341, 0},
}

// statedTable4_2 is the dissertation's target latency vector for Table 4.2 (V, O, C, I, S).
var statedTable4_2 = []float64{69, 10, 10, 166, 200}

// solvers runs every MAO test against both the simplex and the vertex-enumeration solver.
var solvers = []struct {
	name  string
	solve func([][]float64) (Solution, error)
}{
	{"simplex", MAO},
	{"vertices", MAOByVertices},
}

// scenario returns the sub-matrix of rtt for the given DC indices.
func scenario(rtt [][]float64, dcs ...int) [][]float64 {
	m := make([][]float64, len(dcs))
	for i, a := range dcs {
		m[i] = make([]float64, len(dcs))
		for j, b := range dcs {
			m[i][j] = rtt[a][b]
		}
	}
	return m
}

// checkMAO checks both solvers against the expected latencies and sum.
func checkMAO(t *testing.T, rtt [][]float64, want []float64, wantSum float64) {
	t.Helper()
	for _, s := range solvers {
		t.Run(s.name, func(t *testing.T) {
			got, err := s.solve(rtt)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.LatencyMs, want) || got.SumMs != wantSum {
				t.Errorf("got %v sum %v, want %v sum %v", got.LatencyMs, got.SumMs, want, wantSum)
			}
			if avg := wantSum / float64(len(want)); got.AverageMs != avg {
				t.Errorf("average %v, want %v", got.AverageMs, avg)
			}
		})
	}
}

func TestMAOTable4_1(t *testing.T) {
	checkMAO(t, table4_1, []float64{5, 25, 15}, 45)
}

func TestMAOTable4_2(t *testing.T) {
	checkMAO(t, table4_2, []float64{68, 10, 10, 165, 200}, 453)

	got, err := MAO(table4_2)
	if err != nil {
		t.Fatal(err)
	}
	var tight []string
	L := got.LatencyMs
	for a := range L {
		for b := a + 1; b < len(L); b++ {
			if L[a]+L[b] == table4_2[a][b] {
				tight = append(tight, table4_2Names[a]+"+"+table4_2Names[b])
			}
		}
	}
	if want := []string{"V+C", "V+S", "O+I", "O+S", "C+I"}; !slices.Equal(tight, want) {
		t.Errorf("tight set %v, want %v", tight, want)
	}
}

func TestMAOTable3_1COVIS(t *testing.T) {
	checkMAO(t, table3_1, []float64{4, 19, 82, 155, 186}, 446)
}

func TestStatedTable4_2LatenciesAreFeasible(t *testing.T) {
	if err := FeasibleNamed(statedTable4_2, table4_2, table4_2Names); err != nil {
		t.Fatal(err)
	}
	if s := newSolution(statedTable4_2).SumMs; s != 455 {
		t.Errorf("sum %v, want 455", s)
	}
}

func TestMAOFractionalTable4_2RoundsUpToStated(t *testing.T) {
	for _, s := range solvers {
		t.Run(s.name, func(t *testing.T) {
			got, err := s.solve(table4_2Fractional)
			if err != nil {
				t.Fatal(err)
			}
			unrounded := []float64{68.4, 9.9, 9.9, 165.4, 199.9}
			for i, v := range got.LatencyMs {
				if math.Abs(v-unrounded[i]) > 1e-6 {
					t.Errorf("L[%s] = %v, want %v", table4_2Names[i], v, unrounded[i])
				}
			}
			if r := RoundUp(got.LatencyMs); !slices.Equal(r, statedTable4_2) {
				t.Errorf("RoundUp = %v, want %v", r, statedTable4_2)
			}
		})
	}
}

func TestMAOTable3_1NonUniqueIsDeterministic(t *testing.T) {
	co := scenario(table3_1, 0, 1)
	covi := scenario(table3_1, 0, 1, 2, 3)
	for _, s := range solvers {
		t.Run("CO/"+s.name, func(t *testing.T) {
			first, err := s.solve(co)
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				again, _ := s.solve(co)
				if !slices.Equal(again.LatencyMs, first.LatencyMs) {
					t.Fatalf("second call gave %v, first %v", again.LatencyMs, first.LatencyMs)
				}
			}
			if l := first.LatencyMs; l[0]+l[1] != 21 {
				t.Errorf("L_C+L_O = %v, want 21", l[0]+l[1])
			}
			// GAP-H8: minimising max L splits the RTT evenly.
			if want := []float64{10.5, 10.5}; !slices.Equal(first.LatencyMs, want) {
				t.Errorf("got %v, want %v", first.LatencyMs, want)
			}
		})
	}
	t.Run("COVI/simplex=vertices", func(t *testing.T) {
		a, errA := MAO(covi)
		b, errB := MAOByVertices(covi)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !slices.Equal(a.LatencyMs, b.LatencyMs) {
			t.Errorf("simplex %v, vertices %v", a.LatencyMs, b.LatencyMs)
		}
	})
}

// randomMetric returns a seeded random n×n shortest-path (hence metric) RTT matrix. Integer
// weights in a small range produce many non-unique optima.
func randomMetric(r *rand.Rand, n int, maxWeight float64, integer bool) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			w := 1 + r.Float64()*(maxWeight-1)
			if integer {
				w = math.Round(w)
			}
			m[i][j], m[j][i] = w, w
		}
	}
	for k := range n {
		for i := range n {
			for j := range n {
				m[i][j] = math.Min(m[i][j], m[i][k]+m[k][j])
			}
		}
	}
	return m
}

func TestMAOMatchesVertexEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(2012, 4))
	for trial := range 300 {
		n := 2 + r.IntN(5)
		integer := trial%3 != 0
		rtt := randomMetric(r, n, []float64{5, 30, 400}[trial%3], integer)
		a, errA := MAO(rtt)
		b, errB := MAOByVertices(rtt)
		if errA != nil || errB != nil {
			t.Fatalf("trial %d %v: simplex %v, vertices %v", trial, rtt, errA, errB)
		}
		tol := 1e-6
		if integer {
			tol = 0 // both solvers snap half-integral optima exactly
		}
		for i := range a.LatencyMs {
			if math.Abs(a.LatencyMs[i]-b.LatencyMs[i]) > tol {
				t.Fatalf("trial %d %v: simplex %v, vertices %v", trial, rtt, a.LatencyMs, b.LatencyMs)
			}
		}
		if err := Feasible(a.LatencyMs, rtt); err != nil {
			t.Fatalf("trial %d: MAO result infeasible: %v", trial, err)
		}
		if err := Feasible(RoundUp(a.LatencyMs), rtt); err != nil {
			t.Fatalf("trial %d: rounded-up MAO result infeasible: %v", trial, err)
		}
	}
}

func TestRoundUp(t *testing.T) {
	got := RoundUp([]float64{5.0000000001, 5, 5.1, 68.4, 9.9, 0, 199.99999999999})
	want := []float64{5, 5, 6, 69, 10, 0, 200}
	if !slices.Equal(got, want) {
		t.Errorf("RoundUp = %v, want %v", got, want)
	}
}

func TestFeasibleNamesViolatedPair(t *testing.T) {
	tests := []struct {
		name    string
		L       []float64
		names   []string
		wantErr string
	}{
		{"VS", []float64{69, 10, 10, 166, 131}, table4_2Names, "L[V]+L[S] = 200 < RTT 268"},
		{"indices", []float64{69, 10, 10, 166, 131}, nil, "L[0]+L[4] = 200 < RTT 268"},
		{"negative", []float64{69, -1, 10, 166, 200}, table4_2Names, "L[O] = -1 < 0"},
		{"length", []float64{1, 2}, nil, "2 latencies for 5 DCs"},
		{"names", statedTable4_2, []string{"V"}, "1 names for 5 DCs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := FeasibleNamed(tt.L, table4_2, tt.names)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if err := Feasible([]float64{69, 10, 10, 166, 131}, table4_2); err == nil || !strings.Contains(err.Error(), "L[0]+L[4]") {
		t.Errorf("Feasible error %v, want it to name L[0]+L[4]", err)
	}
}

func TestInputValidation(t *testing.T) {
	nine := make([][]float64, 9)
	for i := range nine {
		nine[i] = make([]float64, 9)
	}
	tests := []struct {
		name    string
		rtt     [][]float64
		wantErr string
	}{
		{"nil", nil, "at least 2 DCs, got 0"},
		{"single DC", [][]float64{{0}}, "at least 2 DCs, got 1"},
		{"not square", [][]float64{{0, 1}, {1}}, "not square"},
		{"asymmetric", [][]float64{{0, 30}, {31, 0}}, "not symmetric: RTT[0][1] = 30 but RTT[1][0] = 31"},
		{"negative", [][]float64{{0, -1}, {-1, 0}}, "RTT[0][1] = -1 is negative"},
		{"NaN", [][]float64{{0, math.NaN()}, {math.NaN(), 0}}, "RTT[0][1] = NaN is not finite"},
		{"infinite", [][]float64{{0, math.Inf(1)}, {math.Inf(1), 0}}, "is not finite"},
		{"diagonal", [][]float64{{5, 1}, {1, 0}}, "RTT[0][0] = 5, want 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := map[string]func() error{
				"MAO":           func() error { _, err := MAO(tt.rtt); return err },
				"MAOByVertices": func() error { _, err := MAOByVertices(tt.rtt); return err },
				"Throughput":    func() error { _, err := Throughput(tt.rtt, 1); return err },
				"Feasible":      func() error { return Feasible([]float64{0, 0}, tt.rtt) },
			}
			for fn, check := range checks {
				if err := check(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: error %v, want it to contain %q", fn, err, tt.wantErr)
				}
			}
		})
	}
	t.Run("vertex enumeration size", func(t *testing.T) {
		for _, err := range []error{second(MAOByVertices(nine)), second(Throughput(nine, 1))} {
			if err == nil || !strings.Contains(err.Error(), "at most 8 DCs, got 9") {
				t.Errorf("error %v, want a DC limit error", err)
			}
		}
	})
	t.Run("throughput overhead", func(t *testing.T) {
		for _, c := range []float64{0, -1, math.NaN(), math.Inf(1)} {
			if _, err := Throughput(table4_1, c); err == nil || !strings.Contains(err.Error(), "overhead must be positive") {
				t.Errorf("c = %v: error %v, want an overhead error", c, err)
			}
		}
	})
}

func second(_ Solution, err error) error { return err }

func TestMAOBeyondVertexEnumeration(t *testing.T) {
	// Past MaxVertexDCs only the simplex applies: the result must be feasible, deterministic and no
	// worse than the best master/slave assignment (L_M = 0, L_A = RTT(A,M)), which is feasible on
	// a metric.
	r := rand.New(rand.NewPCG(4, 2))
	for _, n := range []int{10, 14} {
		rtt := randomMetric(r, n, 300, true)
		got, err := MAO(rtt)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if err := Feasible(got.LatencyMs, rtt); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if again, _ := MAO(rtt); !slices.Equal(again.LatencyMs, got.LatencyMs) {
			t.Errorf("n=%d: second call gave %v, first %v", n, again.LatencyMs, got.LatencyMs)
		}
		for m := range n {
			if master := sum(rtt[m]); got.SumMs > master {
				t.Errorf("n=%d: MAO sum %v exceeds master/slave at %d (%v)", n, got.SumMs, m, master)
			}
		}
	}
}
