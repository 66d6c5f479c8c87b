package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-kv/meridian/ml/dataset"
)

// The committed LIBSVM fixture of package dataset.
var (
	mlTrain = filepath.Join("..", "..", "ml", "dataset", "testdata", "small.libsvm")
	mlTest  = filepath.Join("..", "..", "ml", "dataset", "testdata", "small-test.libsvm")
)

// TestMLCommand runs every scheme on the fixture: the table, the per-epoch accuracy, and the
// --json contract, in which COP's model hash equals the serial one.
func TestMLCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ml.json")
	code, stdout, stderr := runCLI(t, "ml", "--dataset", mlTrain, "--test", mlTest, "--scheme", "serial,cop,locking,occ,ideal",
		"--workers", "1,2", "--epochs", "4", "--check", "--json", file)
	if code != 0 || strings.Contains(stderr, "\r") {
		t.Fatalf("exit %d (a progress line is for terminals only)\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"12 training samples, 9 features", "loaded in", "planned offline in",
		"accuracy after each epoch", "cop/2", "(= serial)", "ok: 12 committed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 9 { // serial once, four schemes with 1 and 2 workers
		t.Fatalf("%d runs in the JSON, want 9", len(got.Runs))
	}
	serial := got.Runs[0]["model_sha256"]
	for _, r := range got.Runs {
		for _, key := range []string{"scheme", "workers", "samples_per_s", "accuracy", "model_sha256"} {
			if _, ok := r[key]; !ok {
				t.Errorf("run %v lacks %q", r["scheme"], key)
			}
		}
		if r["scheme"] == "cop" && r["model_sha256"] != serial {
			t.Errorf("cop with %v workers: model %v, serial %v", r["workers"], r["model_sha256"], serial)
		}
	}
}

// TestMLPlanningModesAndSave: first-epoch planning marks COP's first epoch, planning at
// sources reports the transposition, and --save writes a LIBSVM file that reads back.
func TestMLPlanningModesAndSave(t *testing.T) {
	code, stdout, stderr := runCLI(t, "ml", "--dataset", mlTrain, "--scheme", "cop", "--workers", "2", "--epochs", "2", "--planning", "first-epoch")
	if code != 0 || !strings.Contains(stdout, "COP plans during its first epoch") || !strings.Contains(stdout, "*") ||
		!strings.Contains(stdout, "accuracy is measured on the training set") {
		t.Errorf("first-epoch: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "ml", "--dataset", mlTrain, "--scheme", "serial,cop", "--workers", "2", "--epochs", "2", "--planning", "sources:3")
	if code != 0 || !strings.Contains(stdout, "planned at 3 sources") || !strings.Contains(stdout, "(= serial)") {
		t.Errorf("sources:3: exit %d\n%s%s", code, stdout, stderr)
	}
	saved := filepath.Join(t.TempDir(), "hot.libsvm")
	code, stdout, stderr = runCLI(t, "ml", "--dataset", mlTrain, "--test", mlTest, "--scheme", "", "--save", saved)
	if code != 0 || strings.Contains(stdout, "accuracy after") {
		t.Fatalf("--save without schemes: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, path := range []string{saved, saved + ".test"} {
		if d, err := dataset.ReadLIBSVMFile(path, nil); err != nil || d.Len() == 0 {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// TestMLUsageErrors: bad flags, datasets and files are one line and status 2; a malformed
// LIBSVM line is named by file and line.
func TestMLUsageErrors(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "bad.libsvm")
	empty := filepath.Join(dir, "empty.libsvm")
	if err := os.WriteFile(malformed, []byte("+1 1:1 2:1\n-1 3:1 2:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "0"}, `ml: --workers: "0" is not a positive number`},
		{[]string{"--workers", "two"}, `ml: --workers: "two" is not a positive number`},
		{[]string{"--scheme", "hogwild"}, `ml: --scheme: unknown scheme "hogwild"`},
		{[]string{"--scheme", ""}, "ml: no scheme to run"},
		{[]string{"--epochs", "0"}, "ml: --epochs must be at least 1"},
		{[]string{"--chunk", "-1"}, "ml: --chunk must be at least 0"},
		{[]string{"--scale", "half"}, `ml: --scale: unknown scale "half"`},
		{[]string{"--planning", "later"}, `ml: --planning: unknown planning "later"`},
		{[]string{"--dataset", "hotspot:10"}, "bad hot-spot size"},
		{[]string{"--dataset", filepath.Join(dir, "missing.libsvm")}, "no such file"},
		{[]string{"--dataset", malformed}, malformed + ":2: feature index 2 after 3 (indices must be ascending)"},
		{[]string{"--dataset", empty}, empty + ": no samples"},
		{[]string{"--dataset", "kdd-like", "--test", mlTest}, "a test file goes with a dataset file"},
		{[]string{"stray"}, `ml: unexpected argument "stray"`},
	} {
		code, _, stderr := runCLI(t, append([]string{"ml", "--epochs", "1"}, tc.args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "meridian: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want status 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}
