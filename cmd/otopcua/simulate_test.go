package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mb "github.com/simonvetter/modbus"

	"github.com/otopcua/otopcua/tests/procs"
)

// simulator is one `otopcua simulate modbus` process on a free loopback port.
type simulator struct {
	t       *testing.T
	addr    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func startSimulator(t *testing.T, profile string) *simulator {
	t.Helper()
	s := &simulator{
		t:       t,
		addr:    fmt.Sprintf("127.0.0.1:%d", procs.FreePort(t)),
		logPath: filepath.Join(t.TempDir(), "simulate.log"),
		done:    make(chan struct{}),
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s.cmd = exec.Command(binary, "simulate", "modbus", "--listen", s.addr, "--profile", profile)
	s.cmd.Env = cleanEnv()
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// client connects a Modbus client, retrying until the simulator listens.
func (s *simulator) client() *mb.ModbusClient {
	s.t.Helper()
	var c *mb.ModbusClient
	procs.CheckFor(s.t, 10*time.Second, 20*time.Millisecond, func() error {
		select {
		case <-s.done:
			s.t.Fatalf("simulator exited: %s\n%s", s.cmd.ProcessState, s.log())
		default:
		}
		var err error
		c, err = mb.NewClient(&mb.ClientConfiguration{URL: "tcp://" + s.addr, Timeout: 2 * time.Second})
		if err != nil {
			return err
		}
		return c.Open()
	})
	if err := c.SetEncoding(mb.BIG_ENDIAN, mb.HIGH_WORD_FIRST); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *simulator) log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// stop sends SIGTERM and returns the exit code and the log.
func (s *simulator) stop() (int, string) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("no exit 10 s after SIGTERM:\n%s", s.log())
	}
	return s.cmd.ProcessState.ExitCode(), s.log()
}

// pressReading is one read of the press's moving points.
type pressReading struct {
	speed       float32
	temperature int16
	counter     uint16
	fault       bool
}

func readPress(c *mb.ModbusClient) (pressReading, error) {
	var r pressReading
	var err error
	if r.speed, err = c.ReadFloat32(10, mb.HOLDING_REGISTER); err != nil {
		return r, fmt.Errorf("read Speed: %w", err)
	}
	in, err := c.ReadRegisters(0, 2, mb.INPUT_REGISTER)
	if err != nil {
		return r, fmt.Errorf("read Temperature, Counter: %w", err)
	}
	r.temperature, r.counter = int16(in[0]), in[1]
	if r.fault, err = c.ReadDiscreteInput(0); err != nil {
		return r, fmt.Errorf("read Fault: %w", err)
	}
	if r.speed < 0 || r.speed > 1500 {
		return r, fmt.Errorf("Speed %v outside 0…1500", r.speed)
	}
	if r.temperature < 200 || r.temperature > 900 {
		return r, fmt.Errorf("Temperature raw %d outside 200…900", r.temperature)
	}
	return r, nil
}

func TestSimulateModbusPress(t *testing.T) {
	s := startSimulator(t, "press")
	c := s.client()

	if v, err := c.ReadRegister(0, mb.HOLDING_REGISTER); err != nil || v != 50 {
		t.Fatalf("Setpoint = %d, %v; want the initial 50", v, err)
	}
	if v, err := c.ReadCoil(1); err != nil || !v {
		t.Fatalf("Run = %v, %v; want the initial true", v, err)
	}
	first, err := readPress(c)
	if err != nil {
		t.Fatal(err)
	}
	if first.fault {
		t.Fatalf("Fault true in the first 30 s: %+v", first)
	}
	// The client writes the writable points: the simulator must keep them.
	if err := c.WriteRegister(0, uint16(0xFFF9)); err != nil { // int16 -7
		t.Fatal(err)
	}
	if err := c.WriteCoil(1, false); err != nil {
		t.Fatal(err)
	}

	procs.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		r, err := readPress(c)
		if err != nil {
			t.Fatal(err) // out of bounds or a failed read: no retry
		}
		switch {
		case r.counter == first.counter:
			return fmt.Errorf("Counter still %d", r.counter)
		case r.counter != first.counter+1 && r.counter != first.counter+2:
			return fmt.Errorf("Counter %d → %d, more than +2 within about a second", first.counter, r.counter)
		case r.speed == first.speed:
			return fmt.Errorf("Speed still %v", r.speed)
		case r.temperature <= first.temperature:
			return fmt.Errorf("Temperature %d → %d, not rising in the first 120 s", first.temperature, r.temperature)
		}
		return nil
	})
	// More than a second of 100 ms ticks has passed since the writes.
	if v, err := c.ReadRegister(0, mb.HOLDING_REGISTER); err != nil || int16(v) != -7 {
		t.Errorf("Setpoint = %d, %v after the ticks; want -7 as written", int16(v), err)
	}
	if v, err := c.ReadCoil(1); err != nil || v {
		t.Errorf("Run = %v, %v after the ticks; want false as written", v, err)
	}
	// Every unit id is answered.
	if err := c.SetUnitId(42); err != nil {
		t.Fatal(err)
	}
	if _, err := readPress(c); err != nil {
		t.Errorf("unit id 42: %v", err)
	}

	code, log := s.stop()
	if code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, log)
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 2 {
		t.Errorf("want two log lines (serving, stopped), got:\n%s", log)
	}
	for _, want := range []string{"listen=" + s.addr, "profile=press", "holding 0 Setpoint int16 writable", "holding 10-11 Speed float32", "coil 1 Run bool writable"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("start line lacks %q: %s", want, lines[0])
		}
	}
}

func TestSimulateModbusTank(t *testing.T) {
	s := startSimulator(t, "tank")
	c := s.client()
	readLevel := func() uint16 {
		v, err := c.ReadRegister(0, mb.INPUT_REGISTER)
		if err != nil || v > 1000 {
			t.Fatalf("Level = %d, %v; want 0…1000", v, err)
		}
		return v
	}
	if v, err := c.ReadRegister(0, mb.HOLDING_REGISTER); err != nil || v != 0 {
		t.Fatalf("ValveSetpoint = %d, %v; want the initial 0", v, err)
	}
	if err := c.WriteRegister(0, 640); err != nil {
		t.Fatal(err)
	}
	first := readLevel()
	procs.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if l := readLevel(); l <= first {
			return fmt.Errorf("Level %d → %d, not rising in the first 60 s", first, l)
		}
		return nil
	})
	if high, err := c.ReadDiscreteInput(0); err != nil || high {
		t.Errorf("HighLevel = %v, %v; want false below 900", high, err)
	}
	if v, err := c.ReadRegister(0, mb.HOLDING_REGISTER); err != nil || v != 640 {
		t.Errorf("ValveSetpoint = %d, %v; want 640 as written", v, err)
	}
	if code, log := s.stop(); code != 0 || !strings.Contains(log, "profile=tank") {
		t.Fatalf("exit %d after SIGTERM, want 0 and profile=tank logged:\n%s", code, log)
	}
}

func TestSimulateModbusUnknownProfileExitsTwo(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", procs.FreePort(t))
	code, out := runBinary(t, cleanEnv(), "simulate", "modbus", "--listen", addr, "--profile", "boiler")
	if code != 2 || !strings.Contains(out, `--profile "boiler": accepted values are press, tank`) {
		t.Fatalf("exit %d, output %q; want 2 naming press, tank", code, out)
	}
	code, out = runBinary(t, cleanEnv(), "simulate", "modbus", "--listen", "127.0.0.1")
	if code != 2 || !strings.Contains(out, "missing port") {
		t.Fatalf("--listen without a port: exit %d, output %q; want 2", code, out)
	}
}

func TestSimulateModbusUsedPortExitsOne(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	code, out := runBinary(t, cleanEnv(), "simulate", "modbus", "--listen", l.Addr().String())
	if code != 1 || !strings.Contains(out, l.Addr().String()+": the address is already in use") {
		t.Fatalf("exit %d, output %q; want 1 and a used-address message", code, out)
	}
}
