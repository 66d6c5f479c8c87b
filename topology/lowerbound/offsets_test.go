package lowerbound

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestThroughputVertexTable4_1(t *testing.T) {
	for _, c := range []float64{1, 5, 10} {
		t.Run(fmt.Sprintf("c=%g", c), func(t *testing.T) {
			got, err := Throughput(table4_1, c)
			if err != nil {
				t.Fatal(err)
			}
			if want := []float64{0, 30, 20}; !slices.Equal(got.LatencyMs, want) {
				t.Errorf("got %v, want %v (master at A)", got.LatencyMs, want)
			}
		})
	}
}

func TestThroughputVertexTable4_2(t *testing.T) {
	for _, c := range []float64{1, 5, 10, 20, 50} {
		t.Run(fmt.Sprintf("c=%g", c), func(t *testing.T) {
			got, err := Throughput(table4_2, c)
			if err != nil {
				t.Fatal(err)
			}
			if want := []float64{66, 0, 19, 175, 210}; !slices.Equal(got.LatencyMs, want) {
				t.Errorf("got %v, want %v", got.LatencyMs, want)
			}
		})
	}
}

func TestThroughputFormulaTable4_1(t *testing.T) {
	tests := []struct {
		name string
		L    []float64
		want float64 // per client, rounded to 0.01 tx/s
	}{
		{"MAO", []float64{5, 25, 15}, 306.67},
		{"paper illustration", []float64{1, 29, 19}, 1087.11},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/N=%d", tt.name, n), func(t *testing.T) {
				got := ThroughputTxnPerSec(tt.L, n) / float64(n)
				if math.Round(got*100)/100 != tt.want {
					t.Errorf("got %.4f·N, want %.2f·N", got, tt.want)
				}
			})
		}
	}
	if got := ThroughputTxnPerSec([]float64{0, 30, 20}, 1); !math.IsInf(got, 1) {
		t.Errorf("zero latency: got %v, want +Inf", got)
	}
}

func TestOffsetsTable4_2(t *testing.T) {
	want := [][]float64{
		{0, 36, 30, 27, -65},
		{-23, 0, 0.5, -77.5, -95},
		{-29, 0.5, 0, -77.5, -81},
		{124, 78.5, 78.5, 0, 69},
		{66, 95, 109, 103, 0},
	}
	co := Offsets(statedTable4_2, table4_2)
	for a := range want {
		if !slices.Equal(co[a], want[a]) {
			t.Errorf("co[%s] = %v, want %v", table4_2Names[a], co[a], want[a])
		}
	}
	if err := CheckRule1(co, table4_2Names); err != nil {
		t.Fatal(err)
	}
	rule1Sums := map[string]float64{
		"O-S": 0, "C-V": 1, "C-O": 1, "C-I": 1, "O-I": 1, "S-V": 1,
		"O-V": 13, "C-S": 28, "I-V": 151, "I-S": 172,
	}
	index := func(name string) int { return slices.Index(table4_2Names, name) }
	for pair, wantSum := range rule1Sums {
		a, b := index(pair[:1]), index(pair[2:])
		if s := co[a][b] + co[b][a]; s != wantSum {
			t.Errorf("co[%s][%s] + co[%[2]s][%[1]s] = %v, want %v", pair[:1], pair[2:], s, wantSum)
		}
	}
	// Eq. 4.4 with exact RTTs recovers the target latencies.
	if got := PredictedLatency(co, table4_2); !slices.Equal(got, statedTable4_2) {
		t.Errorf("predicted latency %v, want %v", got, statedTable4_2)
	}
}

func TestOffsetsClampNegativeRTTEstimate(t *testing.T) {
	co := Offsets([]float64{5, 25}, [][]float64{{0, -10}, {-10, 0}})
	if want := [][]float64{{0, 5}, {25, 0}}; !slices.Equal(co[0], want[0]) || !slices.Equal(co[1], want[1]) {
		t.Errorf("got %v, want %v", co, want)
	}
}

func TestOffsetsFromMAOAnyEstimateSatisfyRule1(t *testing.T) {
	// Eq. 4.5: offsets from an LP solved on an RTT estimate satisfy Rule 1, however wrong the
	// estimate; an error only shifts latency (Eq. 4.4 against the real RTTs).
	estimate := [][]float64{{0, 50, 10}, {50, 0, 60}, {10, 60, 0}}
	sol, err := MAO(estimate)
	if err != nil {
		t.Fatal(err)
	}
	co := Offsets(sol.LatencyMs, estimate)
	if err := CheckRule1(co, []string{"A", "B", "C"}); err != nil {
		t.Fatal(err)
	}
	// MAO on the estimate is (0, 50, 10); against the real Table 4.1 RTTs, e.g. B's offsets
	// co[B][A] = 25 and co[B][C] = 20 predict max(25+15, 20+20) = 40.
	if got, want := PredictedLatency(co, table4_1), []float64{5, 40, 15}; !slices.Equal(got, want) {
		t.Errorf("predicted %v, want %v", got, want)
	}
}

func TestHeliosBOffsets(t *testing.T) {
	co := HeliosBOffsets(3)
	for a := range co {
		if !slices.Equal(co[a], []float64{0, 0, 0}) {
			t.Fatalf("row %d = %v, want zeros", a, co[a])
		}
	}
	if err := CheckRule1(co, nil); err != nil {
		t.Fatal(err)
	}
	// Helios-B waits max_B RTT(A,B)/2.
	if got, want := PredictedLatency(co, table4_1), []float64{15, 20, 20}; !slices.Equal(got, want) {
		t.Errorf("predicted %v, want %v", got, want)
	}
}

func TestPredictedLatencyEq4_4(t *testing.T) {
	tests := []struct {
		name string
		co   [][]float64
		rtt  [][]float64
		want []float64
	}{
		{"Table4_1 MAO offsets", Offsets([]float64{5, 25, 15}, table4_1), table4_1, []float64{5, 25, 15}},
		{"single DC", [][]float64{{0}}, [][]float64{{0}}, []float64{0}},
		{"never below zero", [][]float64{{0, -50}, {50, 0}}, [][]float64{{0, 20}, {20, 0}}, []float64{0, 60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PredictedLatency(tt.co, tt.rtt); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckRule1RejectsNegativeSum(t *testing.T) {
	tests := []struct {
		name    string
		co      [][]float64
		names   []string
		wantErr string
	}{
		{"negative sum", [][]float64{{0, 5, 0}, {-6, 0, 0}, {0, 0, 0}}, []string{"A", "B", "C"}, "co[A][B] + co[B][A] = -1 < 0"},
		{"indices", [][]float64{{0, 0, 0}, {0, 0, -0.5}, {0, 0, 0}}, nil, "co[1][2] + co[2][1] = -0.5 < 0"},
		{"NaN", [][]float64{{0, math.NaN()}, {0, 0}}, nil, "co[0][1] + co[1][0] = NaN"},
		{"not square", [][]float64{{0, 0}, {0}}, nil, "not square"},
		{"names", [][]float64{{0, 0}, {0, 0}}, []string{"A"}, "1 names for 2 DCs"},
		{"one below Table 4.2 O-S", func() [][]float64 {
			co := Offsets(statedTable4_2, table4_2)
			co[4][1]--
			return co
		}(), table4_2Names, "co[O][S] + co[S][O] = -1 < 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRule1(tt.co, tt.names)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
