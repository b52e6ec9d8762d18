package sandbox

// This file defines the worker of the tests' pools, which the test binary serves as, and the
// requests the tests send it.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const testProtocol = "sandbox-test/1"

// TestMain lets the test binary serve as a worker of the tests' pools: an echo server whose
// requests say what to do.
func TestMain(m *testing.M) {
	if IsWorker() {
		if os.Getenv("SANDBOX_TEST_NOSTART") != "" {
			os.Stderr.WriteString("cannot start\n")
			os.Exit(3)
		}
		if os.Getenv("SANDBOX_TEST_HANG") != "" {
			time.Sleep(time.Hour) // never says it is ready
		}
		if err := Serve(testProtocol, echo); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if IsChild() {
		os.Exit(runChild())
	}
	if os.Getenv("SANDBOX_TEST_ORPHANER") != "" {
		os.Exit(orphaner())
	}
	os.Exit(m.Run())
}

// orphaner is the parent of TestOrphanDies: it starts a worker, sets it to sleep for an hour,
// prints its pid and exits.
func orphaner() int {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol})
	w, err := p.Get(context.Background(), 128<<20, "", false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go w.Call(context.Background(), &call{kind: 's'}, CallOptions{First: time.Hour})
	time.Sleep(100 * time.Millisecond) // the request is on its way
	fmt.Println(w.child.cmd.Process.Pid)
	return 0
}

// sink and chunks keep what the children allocate alive.
var (
	sink   []byte
	chunks [][]byte
)

// echo answers each request frame: 'e' with its body, 'b' by allocating without end, 'a' by
// allocating and keeping as many MiB as its body says, 's' by sleeping, 'p' by panicking, 'g'
// with its GOMAXPROCS, 'n' by setting its progress to its body (and 'N' by then dying of
// its memory limit), 'w' by steps of its progress before it answers, 'x' by frames aside
// from its answers before it hangs, 'k' by setting its mark to its body (and 'K' by then dying
// of its memory limit), 'j' by marks before it answers, 'v' by dying of a signal once it
// keeps as many MiB as its body says and has published its peak.
func echo(in *FrameReader, out *bufio.Writer) error {
	for {
		kind, body, err := in.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch kind {
		case 'e':
			WriteFrame(out, 'd', body)
		case 'b':
			for {
				allocate(16 << 20)
			}
		case 'a':
			mib, err := strconv.Atoi(string(body))
			if err != nil {
				return err
			}
			for range mib {
				allocate(1 << 20)
			}
			WriteFrame(out, 'd', body)
		case 's':
			time.Sleep(time.Hour)
		case 'p':
			panic("not a memory problem")
		case 'g':
			WriteFrame(out, 'd', []byte(strconv.Itoa(runtime.GOMAXPROCS(0))))
		case 'n', 'N', 'k', 'K':
			n, err := strconv.ParseUint(string(body), 10, 64)
			if err != nil {
				return err
			}
			if kind == 'n' || kind == 'N' {
				SetProgress(n)
			} else {
				SetMark(n)
			}
			if kind == 'N' || kind == 'K' {
				allocate(1 << 30) // dies of its memory limit
			}
			WriteFrame(out, 'd', []byte(strconv.FormatBool(HasProgress())))
		case 'w':
			// "STEPS,MS": a step of progress every MS milliseconds, STEPS times, then
			// an answer; with STEPS negative, one step and then a hang.
			n, d := timesEvery(body)
			for i := range max(n, 1) {
				time.Sleep(d)
				SetProgress(uint64(1000 + i))
			}
			if n < 0 {
				time.Sleep(time.Hour)
			}
			WriteFrame(out, 'd', body)
		case 'x':
			// "N,MS": a frame 'x' every MS milliseconds, N times, then a hang.
			n, d := timesEvery(body)
			for range n {
				WriteFrame(out, 'x', nil)
				if err := out.Flush(); err != nil {
					return err
				}
				time.Sleep(d)
			}
			time.Sleep(time.Hour)
		case 'v':
			// As a collector that finds no memory dies: of a signal, with no word of memory.
			mib, err := strconv.Atoi(string(body))
			if err != nil {
				return err
			}
			for range mib {
				allocate(1 << 20)
			}
			want := uint64(peakRSS(os.Getpid()))
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
				if peakWord == nil || atomic.LoadUint64(peakWord) >= want {
					break
				}
				runtime.GC() // the peak is published after a collection
				time.Sleep(time.Millisecond)
			}
			self, _ := os.FindProcess(os.Getpid())
			self.Signal(syscall.SIGSEGV)
			time.Sleep(time.Hour)
		case 'j':
			// "N,MS": a mark every MS milliseconds, N times, then an answer.
			n, d := timesEvery(body)
			for i := range n {
				SetMark(uint64(1000 + i))
				time.Sleep(d)
			}
			WriteFrame(out, 'd', body)
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// timesEvery parses the body "N,MS" of a request: a count and a period in milliseconds.
func timesEvery(body []byte) (int, time.Duration) {
	count, ms, _ := strings.Cut(string(body), ",")
	n, _ := strconv.Atoi(count)
	d, _ := strconv.Atoi(ms)
	return n, time.Duration(d) * time.Millisecond
}

// allocate allocates n bytes, touches each page and keeps them in chunks.
func allocate(n int) {
	chunk := make([]byte, n)
	for j := 0; j < len(chunk); j += 4096 {
		chunk[j] = 1
	}
	chunks = append(chunks, chunk)
}

// call is an Exchange of one frame and one answer.
type call struct {
	kind  byte
	body  string
	got   string
	aside int // the frames aside from the answer
}

func (c *call) Send(w *bufio.Writer) error {
	if err := WriteFrame(w, c.kind, []byte(c.body)); err != nil {
		return err
	}
	return w.Flush()
}

func (c *call) Answer(kind byte, body []byte) (bool, error) {
	if kind == 'x' {
		c.aside++
		return false, nil
	}
	if kind != 'd' {
		return false, fmt.Errorf("got a frame of kind %q, want d", kind)
	}
	c.got = string(body)
	return true, nil
}

// getWorker gets a worker of 128 MiB from p.
func getWorker(t *testing.T, p *Pool) *Worker {
	t.Helper()
	w, err := p.Get(context.Background(), 128<<20, "", false)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
