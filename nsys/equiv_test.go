package nsys

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// canonicalHash is the SHA-256 of everything a decode produces from path:
// the Dump of the trace with its sources and warnings, the sources' Meta,
// devices, processes and threads. The file's directory is cut out so that
// the hash does not depend on where the test data lies.
func canonicalHash(t *testing.T, path string, dec Decoder) string {
	t.Helper()
	tr, err := dec.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return traceHash(t, tr, path)
}

// traceHash is canonicalHash of a model already decoded from path.
func traceHash(t *testing.T, tr *ingest.Trace, path string) string {
	t.Helper()
	w := &canonWriter{h: sha256.New(), cut: []byte(filepath.Dir(path) + string(filepath.Separator))}
	if err := tr.Dump(w, ingest.DumpOptions{Sources: true, Warnings: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range tr.Sources {
		keys := make([]string, 0, len(s.Meta))
		for k := range s.Meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "meta %q=%q\n", k, s.Meta[k])
		}
	}
	fmt.Fprintf(w, "devices %+v\nprocesses %+v\nthreads %+v\n", tr.Devices, tr.Processes, tr.Threads)
	w.flush()
	return hex.EncodeToString(w.h.Sum(nil))
}

// canonWriter hashes what is written to it with every occurrence of cut
// removed, a line at a time: the hash of the whole text so cut, without
// holding it (a real export's Dump is tens of MB). cut holds no newline, so
// no occurrence spans two lines.
type canonWriter struct {
	h       hash.Hash
	cut     []byte
	pending []byte
}

func (w *canonWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	if i := bytes.LastIndexByte(w.pending, '\n'); i >= 0 {
		w.h.Write(bytes.ReplaceAll(w.pending[:i+1], w.cut, nil))
		w.pending = append(w.pending[:0], w.pending[i+1:]...)
	}
	return len(p), nil
}

func (w *canonWriter) flush() {
	w.h.Write(bytes.ReplaceAll(w.pending, w.cut, nil))
	w.pending = w.pending[:0]
}

// realHashes are the canonical hashes of the real exports of
// ../shared/testdata/nsys, recorded with the decoder reading through
// modernc.org/sqlite: a change of the SQLite reader must give exactly the
// same model. A change that alters the model on purpose records the new
// hashes the failure prints.
// Key: file name and kernel-name option.
// "demo" is testdata/demo's export (written by the simulator through
// modernc.org/sqlite) and "written" an export WriteSQLite writes now: its
// decode must not change with the writer's page layout.
var realHashes = map[string]string{
	"demo": "1d6cf32cbd82db579e67ecf71140e60d87c4960474353213994f582ff0144bbc",
	"frasertajima-weatherbench2-report1-nsys2025.5.1.sqlite/0":      "6a9b5b38772c3cc9cd86c89c4c16397d3d3783f61ade6f22864ae6b40094e8fc",
	"frasertajima-weatherbench2-report1-nsys2025.5.1.sqlite/1":      "6a9b5b38772c3cc9cd86c89c4c16397d3d3783f61ade6f22864ae6b40094e8fc",
	"frasertajima-weatherbench2-report1-nsys2025.5.1.sqlite/2":      "6a9b5b38772c3cc9cd86c89c4c16397d3d3783f61ade6f22864ae6b40094e8fc",
	"leiwang1999-memfusion-report1-nsys2023.1.2.sqlite/0":           "b10e48ebb3ea647adc7c37e3d8bbbbfe342f33b4f3dd7203f6d730a99e6ebd3c",
	"leiwang1999-memfusion-report1-nsys2023.1.2.sqlite/1":           "9ad406ab0d707700414f9f24ce04cf0fc9e8caf5a407f6513a766dd2eac24b88",
	"leiwang1999-memfusion-report1-nsys2023.1.2.sqlite/2":           "71136ad80121f9889dad92c670f8fb60f34b3ff17fa8d7d52c95c50aa3aec475",
	"nvidia-fuser-df8f397-report1-nsys2024.6.2.sqlite/0":            "0cf137e335aac2fead82317d1773ca25267959b51da24e5e4de807535ad9235b",
	"nvidia-fuser-df8f397-report1-nsys2024.6.2.sqlite/1":            "90a9965753a923d86fe4fb96e5cc0b2d9293e1bd7684be64493f8e932694de04",
	"nvidia-fuser-df8f397-report1-nsys2024.6.2.sqlite/2":            "57181e11d22aebde5f8e0e28a44e050fca7157b8e5bb6f66f32d60fb3fb12105",
	"nvidia-fuser-report1-nsys2025.1.1.sqlite/0":                    "71dd503270b333fd8cafe74523cab79578bd1450daef38a1299639e6d6b67328",
	"nvidia-fuser-report1-nsys2025.1.1.sqlite/1":                    "48d65fde71f4f0d893e457510d618c489b31225e2e5d722f74a94fabb727ff4f",
	"nvidia-fuser-report1-nsys2025.1.1.sqlite/2":                    "f299b44708e951ddd469acd454f34e59ef00011009197df24453db08882d816c",
	"nvidia-fuser-report2-nsys2024.6.2.sqlite/0":                    "23d618feaac1b67b2f4eb24fa0178a37bd9739517a5a919edd327cf6f784c112",
	"nvidia-fuser-report2-nsys2024.6.2.sqlite/1":                    "d9a4acca2f6b23b1e902da6332320b0e6e96ea2b143bbc46b486766a93b6f28c",
	"nvidia-fuser-report2-nsys2024.6.2.sqlite/2":                    "4ab24dff5f897b59aff6e66b70737721aecc546d45aeb017fe066ecf0806e557",
	"p4arth-cuda-perf-sandbox-report1-nsys2025.5.2.sqlite/0":        "a545de0d6c457370bc7842b8a2d1b05cb200c394e9df133d589b2b5040ff4156",
	"p4arth-cuda-perf-sandbox-report1-nsys2025.5.2.sqlite/1":        "a30c200928c54da265b13daad02ed473f7616d0b23a58349096c81afcca47bf9",
	"p4arth-cuda-perf-sandbox-report1-nsys2025.5.2.sqlite/2":        "8ab94bd5fa07cf8c6e42a839e7baa5b535801d84fed76d3378f9ee9860ca997f",
	"sdroruganti-cuda-kernel-library-report2-nsys2026.1.3.sqlite/0": "cb7b384c9207e11aa70e037cc993b1108b291d492f8ec01a4f00e06be369e692",
	"sdroruganti-cuda-kernel-library-report2-nsys2026.1.3.sqlite/1": "f141890f00e6d24abd5f9b0d2d755199d06244bb1aa3bf4e19ea646e4dd02c2c",
	"sdroruganti-cuda-kernel-library-report2-nsys2026.1.3.sqlite/2": "0ff9304a4ec0bc04fab4ce68a0b3b4a9a87c0d2379c48b1d244bc84413f353ec",
	"written": "4bdbf220bc52c8cf7698ec8d3c2cd37b3e2053a55ef5b3f5f419cbbeac54a474",
	"ynan1-aws_gpu-report2-nsys2025.1.3.sqlite/0": "0fb30e8493cb66eff70f5340211fd0c67240a74c69ddaacc17f9f693febdc05e",
	"ynan1-aws_gpu-report2-nsys2025.1.3.sqlite/1": "3887130017ce710eb70d120edad3037c1bd64937a5060f76d25cde424c5bf7ca",
	"ynan1-aws_gpu-report2-nsys2025.1.3.sqlite/2": "3a9957d20db99d6e74ec4dde2688f696dadcead4bb3e31fa82b1f93f885e3f0e",
}

func TestRealFilesSameModel(t *testing.T) {
	check := func(key, got string) {
		want, ok := realHashes[key]
		switch {
		case !ok:
			t.Errorf("no recorded hash for %s: %q: %q,", key, key, got)
		case got != want:
			t.Errorf("%s decodes to a different model: hash %s, recorded %s (if the change is intended, record it in realHashes: %q: %q,)",
				key, got, want, key, got)
		}
	}
	demo, err := os.ReadFile(filepath.Join("..", "testdata", "demo", "gpu.nsys.sqlite.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(demo))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	demoPath := filepath.Join(t.TempDir(), "gpu.nsys.sqlite")
	if err := os.WriteFile(demoPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	check("demo", canonicalHash(t, demoPath, Decoder{}))
	check("written", canonicalHash(t, benchFile(t, 3000), Decoder{}))
	for _, path := range realFiles(t) {
		for _, kn := range []KernelName{KernelDemangled, KernelMangled, KernelShort} {
			key := fmt.Sprintf("%s/%d", filepath.Base(path), kn)
			if kn == KernelDemangled {
				// Decoder{}: the decode the other real-file tests share.
				check(key, traceHash(t, decodeReal(t, path), path))
				continue
			}
			check(key, canonicalHash(t, path, Decoder{KernelName: kn}))
		}
	}
}
