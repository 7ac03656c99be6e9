package measure

import (
	"os"
	"testing"
	"time"
)

func TestParseStatTicks(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want uint64
		err  bool
	}{
		{"plain", "1234 (benchserver) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 0 0", 300, false},
		{"name with spaces and parens", "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0 5 0 0", 33, false},
		{"truncated", "7 (x) R 1 2 3", 0, true},
		{"no paren", "7 x R", 0, true},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u 22 0", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseStatTicks([]byte(c.in))
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if got != c.want {
				t.Fatalf("got %d, want %d", got, c.want)
			}
		})
	}
}

func TestParseStatusRSS(t *testing.T) {
	in := "Name:\tx\nVmPeak:\t  9000 kB\nVmRSS:\t   35120 kB\nThreads:\t5\n"
	got, err := ParseStatusRSS([]byte(in))
	if err != nil || got != 35120*1024 {
		t.Fatalf("got %d, %v", got, err)
	}
	if _, err := ParseStatusRSS([]byte("Name:\tkthreadd\n")); err == nil {
		t.Fatal("missing VmRSS must be an error")
	}
	if _, err := ParseStatusRSS([]byte("VmRSS:\t12 MB\n")); err == nil {
		t.Fatal("unexpected unit must be an error")
	}
}

func TestParseStatusKB(t *testing.T) {
	in := "VmRSS:\t   35120 kB\nRssAnon:\t   12000 kB\nRssFile:\t   23000 kB\nRssShmem:\t       0 kB\n"
	for key, want := range map[string]uint64{"VmRSS": 35120, "RssAnon": 12000, "RssFile": 23000, "RssShmem": 0} {
		got, err := ParseStatusKB([]byte(in), key)
		if err != nil || got != want*1024 {
			t.Errorf("%s: got %d, %v; want %d", key, got, err, want*1024)
		}
	}
	if _, err := ParseStatusKB([]byte(in), "Rss"); err == nil {
		t.Error("a key that is only a prefix of a line's key must not match")
	}
}

func TestParseStatusCount(t *testing.T) {
	in := "Threads:\t9\nvoluntary_ctxt_switches:\t1204\nnonvoluntary_ctxt_switches:\t17\n"
	for key, want := range map[string]uint64{"Threads": 9, "voluntary_ctxt_switches": 1204, "nonvoluntary_ctxt_switches": 17} {
		if got, err := ParseStatusCount([]byte(in), key); err != nil || got != want {
			t.Errorf("%s: got %d, %v; want %d", key, got, err, want)
		}
	}
	if _, err := ParseStatusCount([]byte(in), "ctxt_switches"); err == nil {
		t.Error("a key that is only a suffix of a line's key must not match")
	}
}

func TestParseStatMinorFaults(t *testing.T) {
	// Fields from 3: state ppid pgrp session tty tpgid flags minflt …
	in := "4242 (a (b) c) S 1 4242 4242 0 -1 4194304 7311 0 12 0 40 2 0 0 20 0 9 0"
	got, err := ParseStatMinorFaults([]byte(in))
	if err != nil || got != 7311 {
		t.Fatalf("got %d, %v; want 7311", got, err)
	}
	if _, err := ParseStatMinorFaults([]byte("4242 (x) S 1")); err == nil {
		t.Fatal("a short line must be an error")
	}
}

func TestOwnProcess(t *testing.T) {
	pid := os.Getpid()
	if _, err := CPUTime(pid); err != nil {
		t.Fatal(err)
	}
	rss, err := RSS(pid)
	if err != nil || rss == 0 {
		t.Fatalf("RSS = %d, %v", rss, err)
	}
	if _, err := CPUTime(1 << 30); err != ErrNoProcess {
		t.Fatalf("missing pid: err = %v, want ErrNoProcess", err)
	}
}

func TestCPUPercent(t *testing.T) {
	if got := CPUPercent(3*time.Second, 2*time.Second); got != 150 {
		t.Fatalf("got %v", got)
	}
	if got := CPUPercent(time.Second, 0); got != 0 {
		t.Fatalf("zero wall: got %v", got)
	}
}
