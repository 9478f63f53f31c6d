package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// demoFacts are the committed demo's own figures, as analyze reports them,
// so that tests of other outputs (Parquet, --requests, stdin, progress)
// compare with the analysis instead of carrying numbers that go stale
// whenever the simulator changes.
type demoFacts struct {
	Requests, Tokens, GPUOps int
	// Bytes is the size of the demo's files on disk.
	Bytes int64
}

var (
	demoFactsOnce sync.Once
	demoFactsVal  demoFacts
	demoFactsErr  string
)

func committedDemo(t *testing.T) demoFacts {
	t.Helper()
	demoFactsOnce.Do(func() {
		dir := filepath.Join("..", "..", "testdata", "demo")
		code, out, stderr := runLLMProf(t, "analyze", "--format", "json", dir)
		if code != ExitOK {
			demoFactsErr = "analyze of the demo: " + stderr
			return
		}
		var doc struct {
			Sources []struct {
				GPUOps int `json:"gpu_ops"`
			} `json:"sources"`
			Requests struct {
				Count int `json:"count"`
			} `json:"requests"`
			Tokens struct {
				Tokens int `json:"tokens"`
			} `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			demoFactsErr = err.Error()
			return
		}
		f := demoFacts{Requests: doc.Requests.Count, Tokens: doc.Tokens.Tokens}
		for _, s := range doc.Sources {
			f.GPUOps += s.GPUOps
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
				f.Bytes += info.Size()
			}
		}
		demoFactsVal = f
	})
	if demoFactsErr != "" {
		t.Fatal(demoFactsErr)
	}
	if demoFactsVal.Requests == 0 || demoFactsVal.Tokens == 0 || demoFactsVal.GPUOps == 0 {
		t.Fatalf("the demo's analysis has no requests, tokens or GPU ops: %+v", demoFactsVal)
	}
	return demoFactsVal
}
