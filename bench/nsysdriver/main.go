// Command nsysdriver compares SQLite drivers on the work the nsys decoder
// does: a full scan of CUPTI_ACTIVITY_KIND_KERNEL (the columns the decoder
// reads, in storage order) into Go structs. It is a separate module so that
// llmprof itself never depends on the cgo driver:
//
//	cd bench/nsysdriver && go run . FILE
//
// Contenders, each run in this process on the same file:
//
//	modernc+database/sql   modernc.org/sqlite (pure Go) through database/sql
//	mattn+database/sql     github.com/mattn/go-sqlite3 (cgo) through database/sql
//	llmprof decoder        nsys.Decoder{Tables: nsys.Kernels}: modernc called
//	                       directly (no database/sql), rows converted into the model
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"time"

	_ "github.com/mattn/go-sqlite3"
	_ "modernc.org/sqlite"

	"github.com/llmprof/llmprof/nsys"
)

const query = `SELECT rowid, start, "end", deviceId, streamId, correlationId, globalPid, demangledName, shortName, mangledName,
	gridX, gridY, gridZ, blockX, blockY, blockZ, graphId, graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid`

type kernel struct {
	start, end                int64
	device, stream, corr, pid int64
	name, short               int64
	grid                      [3]int64
	block                     [3]int64
	graph                     int64
}

func scan(driver, dsn string) (int, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var out []kernel
	var rowid int64
	var k kernel
	var mangled, graphID, graphNode, corr, pid sql.NullInt64
	for rows.Next() {
		if err := rows.Scan(&rowid, &k.start, &k.end, &k.device, &k.stream, &corr, &pid, &k.name, &k.short, &mangled,
			&k.grid[0], &k.grid[1], &k.grid[2], &k.block[0], &k.block[1], &k.block[2], &graphID, &graphNode); err != nil {
			return 0, err
		}
		k.corr, k.pid, k.graph = corr.Int64, pid.Int64, graphID.Int64
		out = append(out, k)
	}
	return len(out), rows.Err()
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nsysdriver FILE")
		os.Exit(2)
	}
	file := os.Args[1]
	contenders := []struct {
		name string
		run  func() (int, error)
	}{
		{"modernc+database/sql", func() (int, error) { return scan("sqlite", "file:"+file+"?mode=ro&immutable=1") }},
		{"mattn+database/sql", func() (int, error) { return scan("sqlite3", "file:"+file+"?mode=ro&immutable=1") }},
		{"llmprof decoder", func() (int, error) {
			t, err := nsys.Decoder{Tables: nsys.Kernels}.DecodeFile(context.Background(), file)
			if err != nil {
				return 0, err
			}
			return len(t.GPUOps), nil
		}},
	}
	fmt.Printf("%-22s %10s %12s %10s\n", "driver", "kernels", "time", "vs mattn")
	times := make([]time.Duration, len(contenders))
	counts := make([]int, len(contenders))
	for round := 0; round < 2; round++ { // the second round, with a warm cache, is reported
		for i, c := range contenders {
			runtime.GC()
			start := time.Now()
			n, err := c.run()
			if err != nil {
				fmt.Fprintln(os.Stderr, c.name+":", err)
				os.Exit(1)
			}
			times[i], counts[i] = time.Since(start), n
		}
	}
	for i, c := range contenders {
		fmt.Printf("%-22s %10d %12s %9.2f×\n", c.name, counts[i], times[i].Round(time.Millisecond), float64(times[i])/float64(times[1]))
	}
}
