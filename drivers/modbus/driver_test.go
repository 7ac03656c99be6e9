package modbus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	mb "github.com/simonvetter/modbus"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// typedTag is a tag named after its place, with a word order.
func typedTag(table string, addr int, typ, order string) deployment.Tag {
	tag := tg(table, addr, typ)
	tag.WordOrder = order
	tag.Name = fmt.Sprintf("%s-%d-%s-%s", table, addr, typ, order)
	return tag
}

// TestReadEveryType: each rawCases value, in both word orders, in holding
// and input registers of a real server, reads back as the value; coils and
// discrete inputs read back as set. One poll, one request per table.
func TestReadEveryType(t *testing.T) {
	dev := newDevice()
	var tags []deployment.Tag
	var want []any
	for _, table := range []string{H, I} {
		a := 0
		for _, c := range rawCases {
			for _, o := range []struct {
				order string
				words []uint16
			}{{"big", c.big}, {"little", c.small}, {"", c.big}} {
				regs := &dev.holding
				if table == I {
					regs = &dev.input
				}
				copy(regs[a:], o.words)
				tags = append(tags, typedTag(table, a, c.typ, o.order))
				want = append(want, c.value)
				a += len(o.words)
			}
		}
	}
	for k, b := range []bool{true, false, true, true, false, false, true} {
		dev.coils[100+k], dev.discrete[7+k] = b, !b
		tags = append(tags, tg(C, 100+k, "bool"), tg(D, 7+k, "bool"))
		want = append(want, b, !b)
	}
	addr := freeAddr(t)
	serve(t, dev, addr)
	clock := clockwork.NewFakeClock()
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clock)
	rs, err := d.Read(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		at := drivers.PolledTime(clock.Now()) // the fake clock starts at the wall clock's now, not a whole ms
		if r.Status != ua.StatusGood || !sameValue(r.Value, want[i]) || !r.SourceTime.Equal(at) || r.SourceTime.Nanosecond()%1e6 != 0 {
			t.Errorf("%s: %+v, want Good %v (%T) at %v", tags[i].Name, r, want[i], want[i], at)
		}
	}
	for _, table := range tableOrder {
		if n := len(dev.readLog(table)); n != 1 {
			t.Errorf("%s: %d read requests, want 1", table, n)
		}
	}
	st := d.Stats()
	if st.ReadsOK != 4 || st.ReadsFailed != 0 || !st.Connected || st.Polls != 1 || st.Connects != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestScaledReadAndWrite: raw × scale + offset on read, the inverse on
// write, and a value whose raw value does not fit is refused unsent.
func TestScaledReadAndWrite(t *testing.T) {
	dev := newDevice()
	dev.input[0] = 235                       // 23.5 °C
	dev.holding[3] = 0xffe7                  // -25 → -2.5
	dev.holding[4] = 100                     // 100 - 40 = 60
	copy(dev.holding[6:], []uint16{1000, 0}) // little: 1000 × 0.01 + 1
	addr := freeAddr(t)
	serve(t, dev, addr)
	temp := tg(I, 0, "int16")
	temp.Scale, temp.Offset = ptr(0.1), ptr(0.0)
	set := tg(H, 3, "int16")
	set.Scale, set.Writable = ptr(0.1), true
	off := tg(H, 4, "uint16")
	off.Offset, off.Writable = ptr(-40.0), true
	wide := typedTag(H, 5+1, "int32", "little")
	wide.Scale, wide.Offset, wide.Writable = ptr(0.01), ptr(1.0), true
	tags := []deployment.Tag{temp, set, off, wide}
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clockwork.NewFakeClock())
	ctx := ctxT(t)

	rs, err := d.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{23.5, -2.5, 60, 11} {
		if got, ok := rs[i].Value.(float64); !ok || math.Abs(got-want) > 1e-9 || rs[i].Status != ua.StatusGood {
			t.Errorf("%s: %+v, want Good %v", tags[i].Name, rs[i], want)
		}
	}

	for _, c := range []struct {
		tag   string
		value any
		at    uint16
		regs  []uint16
	}{
		{set.Name, 23.4, 3, []uint16{234}},
		{set.Name, float32(-0.5), 3, []uint16{0xfffb}},
		{off.Name, 0, 4, []uint16{40}},
		{wide.Name, 655.36 + 1, 6, []uint16{0, 1}}, // raw 65536, low word first
	} {
		if err := d.Write(ctx, c.tag, c.value); err != nil {
			t.Fatalf("Write(%s, %v): %v", c.tag, c.value, err)
		}
		w := dev.writeLog()
		last := w[len(w)-1]
		if last.addr != c.at || !reflect.DeepEqual(last.regs, c.regs) {
			t.Errorf("Write(%s, %v) wrote %+v, want %d: %04x", c.tag, c.value, last, c.at, c.regs)
		}
	}
	before := len(dev.writeLog())
	for _, c := range []struct {
		tag   string
		value any
	}{{set.Name, 3276.8}, {set.Name, -3276.9}, {off.Name, -41}, {off.Name, 65536 - 40}, {wide.Name, math.Inf(1)}} {
		err := d.Write(ctx, c.tag, c.value)
		if !errors.Is(err, drivers.ErrOutOfRange) || drivers.StatusOf(err) != ua.StatusBadOutOfRange {
			t.Errorf("Write(%s, %v) = %v, want ErrOutOfRange", c.tag, c.value, err)
		}
	}
	if n := len(dev.writeLog()); n != before {
		t.Errorf("%d refused writes reached the device", n-before)
	}
}

// TestPollOf300Registers: 300 contiguous holding registers take 3
// requests per poll (125 + 125 + 50).
func TestPollOf300Registers(t *testing.T) {
	dev := newDevice()
	for a := 0; a < 300; a++ {
		dev.holding[a] = uint16(a * 3)
	}
	addr := freeAddr(t)
	serve(t, dev, addr)
	tags := run(H, 0, 300, "uint16")
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clockwork.NewFakeClock())
	for poll := 1; poll <= 2; poll++ {
		rs, err := d.Read(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			if r.Value != uint16(i*3) || r.Status != ua.StatusGood {
				t.Fatalf("tag %d: %+v", i, r)
			}
		}
		want := []span{{start: 0, end: 124}, {start: 125, end: 249}, {start: 250, end: 299}}
		if got := dev.readLog(H); !reflect.DeepEqual(got, append(want, want...)[:3*poll]) {
			t.Fatalf("poll %d: requests %v", poll, got)
		}
	}
	if st := d.Stats(); st.ReadsOK != 6 || st.ReadsFailed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestWriteEveryType: a write of every writable type and word order lands
// in the server's registers as rawCases says, reads back as written, and
// coils are written too; refused writes never reach the device.
func TestWriteEveryType(t *testing.T) {
	dev := newDevice()
	addr := freeAddr(t)
	serve(t, dev, addr)
	var tags []deployment.Tag
	type want struct {
		at    int
		regs  []uint16
		value any
	}
	var wants []want
	a := 0
	for _, c := range rawCases {
		for _, o := range []struct {
			order string
			words []uint16
		}{{"big", c.big}, {"little", c.small}} {
			tag := typedTag(H, a, c.typ, o.order)
			tag.Writable = true
			tags = append(tags, tag)
			wants = append(wants, want{a, o.words, c.value})
			a += len(o.words) + 1
		}
	}
	coil := tg(C, 9, "bool")
	coil.Writable = true
	ro := tg(H, 500, "int16")
	in := tg(I, 0, "int16")
	in.Writable = true // an input register cannot be written, whatever it says
	tags = append(tags, coil, ro, in)
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clockwork.NewFakeClock())
	ctx := ctxT(t)

	for i, w := range wants {
		if err := d.Write(ctx, tags[i].Name, w.value); err != nil {
			t.Fatalf("Write(%s, %v): %v", tags[i].Name, w.value, err)
		}
		dev.mu.Lock()
		got := append([]uint16(nil), dev.holding[w.at:w.at+len(w.regs)]...)
		dev.mu.Unlock()
		if !reflect.DeepEqual(got, w.regs) {
			t.Errorf("Write(%s, %v): registers %04x, want %04x", tags[i].Name, w.value, got, w.regs)
		}
	}
	for _, b := range []bool{true, false, true} {
		if err := d.Write(ctx, coil.Name, b); err != nil {
			t.Fatal(err)
		}
		dev.mu.Lock()
		got := dev.coils[9]
		dev.mu.Unlock()
		if got != b {
			t.Errorf("coil after writing %v: %v", b, got)
		}
	}
	rs, err := d.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range wants {
		if !sameValue(rs[i].Value, w.value) {
			t.Errorf("%s reads %v after writing %v", tags[i].Name, rs[i].Value, w.value)
		}
	}
	if rs[len(wants)].Value != true {
		t.Errorf("coil reads %v", rs[len(wants)].Value)
	}

	before := len(dev.writeLog())
	for _, c := range []struct {
		tag   string
		value any
		want  error
		code  ua.StatusCode
	}{
		{tags[0].Name, 40000, drivers.ErrOutOfRange, ua.StatusBadOutOfRange},            // int16
		{tags[0].Name, -32769, drivers.ErrOutOfRange, ua.StatusBadOutOfRange},           // int16
		{tags[4].Name, -1, drivers.ErrOutOfRange, ua.StatusBadOutOfRange},               // uint16
		{tags[4].Name, 65536, drivers.ErrOutOfRange, ua.StatusBadOutOfRange},            // uint16
		{tags[6].Name, int64(1) << 31, drivers.ErrOutOfRange, ua.StatusBadOutOfRange},   // int32
		{tags[10].Name, uint64(1) << 32, drivers.ErrOutOfRange, ua.StatusBadOutOfRange}, // uint32
		{tags[12].Name, 1e39, drivers.ErrOutOfRange, ua.StatusBadOutOfRange},            // float32
		{tags[0].Name, 1.5, drivers.ErrOutOfRange, ua.StatusBadOutOfRange},
		{tags[0].Name, true, drivers.ErrTypeMismatch, ua.StatusBadTypeMismatch},
		{coil.Name, 1, drivers.ErrTypeMismatch, ua.StatusBadTypeMismatch},
		{ro.Name, 1, drivers.ErrNotWritable, ua.StatusBadNotWritable},
		{in.Name, 1, drivers.ErrNotWritable, ua.StatusBadNotWritable},
		{"nope", 1, drivers.ErrUnknownTag, ua.StatusBadNodeIDUnknown},
	} {
		err := d.Write(ctx, c.tag, c.value)
		if !errors.Is(err, c.want) || drivers.StatusOf(err) != c.code {
			t.Errorf("Write(%s, %v) = %v (%v), want %v (%v)", c.tag, c.value, err, drivers.StatusOf(err), c.want, c.code)
		}
	}
	if n := len(dev.writeLog()); n != before {
		t.Errorf("%d refused writes reached the device", n-before)
	}
	st := d.Stats()
	if st.WritesOK != uint64(len(wants)+3) || st.WritesFailed != 13 {
		t.Errorf("stats %+v", st)
	}

	// The device refuses a write: its exception is the result.
	dev.set(func(dev *device) {
		dev.refuse = func(table string, _, _ uint16, write bool) error {
			if !write {
				return nil
			}
			if table == C {
				return mb.ErrServerDeviceFailure
			}
			return mb.ErrIllegalDataValue
		}
	})
	if err := d.Write(ctx, tags[0].Name, 1); drivers.StatusOf(err) != ua.StatusBadOutOfRange {
		t.Errorf("refused register write: %v (%v)", err, drivers.StatusOf(err))
	}
	if err := d.Write(ctx, coil.Name, false); drivers.StatusOf(err) != ua.StatusBadDeviceFailure {
		t.Errorf("refused coil write: %v (%v)", err, drivers.StatusOf(err))
	}
	if st := d.Stats(); !st.Connected || st.Connects != 1 {
		t.Errorf("an exception dropped the connection: %+v", st)
	}
}

// TestExceptionMarksOnlyItsRequest: an exception marks the tags of its
// request with the documented code (keeping their last value) while the
// other requests' tags stay Good, and the connection stays.
func TestExceptionMarksOnlyItsRequest(t *testing.T) {
	dev := newDevice()
	dev.holding[0], dev.holding[200], dev.holding[201] = 10, 20, 21
	dev.coils[3] = true
	tags := []deployment.Tag{tg(H, 0, "int16"), tg(H, 1, "int16"), tg(H, 200, "int16"), tg(H, 201, "int16"), tg(C, 3, "bool")}
	var mu sync.Mutex
	refuse := map[uint16]error{200: mb.ErrIllegalDataAddress}
	dev.refuse = func(table string, addr, _ uint16, _ bool) error {
		mu.Lock()
		defer mu.Unlock()
		if table == H {
			return refuse[addr]
		}
		return nil
	}
	addr := freeAddr(t)
	serve(t, dev, addr)
	clock := clockwork.NewFakeClock()
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clock)
	ctx := ctxT(t)
	t0 := clock.Now()

	check := func(step string, want []drivers.Reading) {
		t.Helper()
		rs, _ := d.Read(ctx)
		if !reflect.DeepEqual(rs, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", step, rs, want)
		}
	}
	good := func(v any, at time.Time) drivers.Reading {
		return drivers.Reading{Value: v, Status: ua.StatusGood, SourceTime: drivers.PolledTime(at)}
	}
	bad := func(v any, code ua.StatusCode, at time.Time) drivers.Reading {
		return drivers.Reading{Value: v, Status: code, SourceTime: drivers.PolledTime(at)}
	}

	check("illegal address", []drivers.Reading{good(int16(10), t0), good(int16(0), t0),
		bad(nil, ua.StatusBadConfigurationError, t0), bad(nil, ua.StatusBadConfigurationError, t0), good(true, t0)})
	_, err := d.Read(ctx)
	var se *drivers.StatusError
	if !errors.As(err, &se) || se.Code != ua.StatusBadConfigurationError || !errors.Is(err, mb.ErrIllegalDataAddress) {
		t.Fatalf("Read error %v", err)
	}

	clock.Advance(time.Second)
	t1 := clock.Now()
	mu.Lock()
	refuse[200] = nil
	mu.Unlock()
	check("served", []drivers.Reading{good(int16(10), t1), good(int16(0), t1), good(int16(20), t1), good(int16(21), t1), good(true, t1)})

	clock.Advance(time.Second)
	t2 := clock.Now()
	mu.Lock()
	refuse[200] = mb.ErrServerDeviceBusy
	mu.Unlock()
	check("busy", []drivers.Reading{good(int16(10), t2), good(int16(0), t2),
		bad(int16(20), ua.StatusBadDeviceFailure, t2), bad(int16(21), ua.StatusBadDeviceFailure, t2), good(true, t2)})
	clock.Advance(time.Second)
	t3 := clock.Now()
	check("still busy: the bad time stays", []drivers.Reading{good(int16(10), t3), good(int16(0), t3),
		bad(int16(20), ua.StatusBadDeviceFailure, t2), bad(int16(21), ua.StatusBadDeviceFailure, t2), good(true, t3)})

	clock.Advance(time.Second)
	t4 := clock.Now()
	mu.Lock()
	refuse[200] = mb.ErrGWTargetFailedToRespond
	mu.Unlock()
	check("gateway", []drivers.Reading{good(int16(10), t4), good(int16(0), t4),
		bad(int16(20), ua.StatusBadCommunicationError, t4), bad(int16(21), ua.StatusBadCommunicationError, t4), good(true, t4)})

	st := d.Stats()
	if st.Connects != 1 || !st.Connected || st.ReadsOK+st.ReadsFailed != st.Polls*3 || st.ReadsFailed != 5 {
		t.Errorf("stats %+v", st)
	}
	if h := d.Health(); h.State != drivers.StateConnected || h.LastError == nil {
		t.Errorf("health %+v", h)
	}
}

// TestSplitAtAGapTheDeviceLacks: a device that refuses a merged request
// because of an address in the gap gets its tags read without the gap, at
// once and from then on.
func TestSplitAtAGapTheDeviceLacks(t *testing.T) {
	dev := newDevice()
	dev.holding[0], dev.holding[5] = 1, 2
	dev.refuse = func(table string, a, qty uint16, _ bool) error {
		if int(a) <= 4 && int(a)+int(qty)-1 >= 1 { // 1–4 do not exist
			return mb.ErrIllegalDataAddress
		}
		return nil
	}
	addr := freeAddr(t)
	serve(t, dev, addr)
	tags := []deployment.Tag{tg(H, 0, "int16"), tg(H, 5, "int16")}
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clockwork.NewFakeClock())
	if got := d.Plan(); len(got) != 1 {
		t.Fatalf("plan %v", got)
	}
	for poll := 0; poll < 2; poll++ {
		rs, err := d.Read(ctxT(t))
		if err != nil || rs[0].Value != int16(1) || rs[1].Value != int16(2) {
			t.Fatalf("poll %d: %+v, %v", poll, rs, err)
		}
	}
	want := []span{{start: 0, end: 5}, {start: 0, end: 0}, {start: 5, end: 5}, {start: 0, end: 0}, {start: 5, end: 5}}
	if got := dev.readLog(H); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if got := d.Plan(); !reflect.DeepEqual(got, []Request{rq(H, 0, 1, 0), rq(H, 5, 1, 1)}) {
		t.Fatalf("plan %v", got)
	}
	if st := d.Stats(); st.ReadsOK != 4 || st.ReadsFailed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestDeviceStopAndRestart runs a Poller on the wall clock against a real
// server: stopped, every tag is BadCommunicationError with its last value
// within two poll intervals; restarted on the same port, Good again.
func TestDeviceStopAndRestart(t *testing.T) {
	dev := newDevice()
	dev.holding[0], dev.input[0], dev.coils[0] = 7, 8, true
	addr := freeAddr(t)
	srv := serve(t, dev, addr)
	tags := []deployment.Tag{tg(H, 0, "int16"), tg(I, 0, "int16"), tg(C, 0, "bool")}
	const interval = 200 * time.Millisecond
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags, Timeout: deployment.Duration(time.Second)}, clockwork.NewRealClock())

	var mu sync.Mutex
	var last drivers.Poll
	p := &drivers.Poller{Driver: d, Interval: interval, Sink: drivers.SinkFunc(func(p drivers.Poll) {
		mu.Lock()
		last = p
		mu.Unlock()
	})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			cancel()
			<-done
		})
	}
	defer stop()
	latest := func() drivers.Poll {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	all := func(values []any, code ua.StatusCode) func() error {
		return func() error {
			p := latest()
			if len(p.Readings) != len(tags) {
				return fmt.Errorf("no poll yet")
			}
			for i, r := range p.Readings {
				if r.Status != code || r.Value != values[i] {
					return fmt.Errorf("poll %d tag %d: %+v, want %v %v", p.Seq, i, r, values[i], code)
				}
			}
			return nil
		}
	}
	first := []any{int16(7), int16(8), true}
	checkFor(t, 5*time.Second, 5*time.Millisecond, all(first, ua.StatusGood))

	srv.Stop()
	checkFor(t, 2*interval, 5*time.Millisecond, all(first, ua.StatusBadCommunicationError))
	if st := d.Stats(); st.Connected {
		t.Errorf("stats after stop %+v", st)
	}
	if h := d.Health(); h.State == drivers.StateConnected || h.LastError == nil || !errors.Is(h.LastError, drivers.ErrCommunication) {
		t.Errorf("health after stop %+v", h)
	}

	dev.set(func(dev *device) { dev.holding[0] = 70 })
	serve(t, dev, addr)
	checkFor(t, 10*time.Second, 5*time.Millisecond, all([]any{int16(70), int16(8), true}, ua.StatusGood))
	st := d.Stats()
	if !st.Connected || st.Connects < 2 || st.ReadsFailed == 0 {
		t.Errorf("stats after restart %+v", st)
	}
	stop()
	st = d.Stats()
	if st.ReadsOK+st.ReadsFailed != st.Polls*3 {
		t.Errorf("reads %d + %d != polls %d × 3", st.ReadsOK, st.ReadsFailed, st.Polls)
	}
	if h := d.Health(); h.State != drivers.StateConnected || h.LastError != nil {
		t.Errorf("health after restart %+v", h)
	}
}

// TestBackoff walks the reconnect back-off on a fake clock against a port
// nobody listens on: a connect only once the back-off has passed, 100 ms
// doubling to 5 s; after the device answered, the back-off starts again.
func TestBackoff(t *testing.T) {
	addr := freeAddr(t)
	clock := clockwork.NewFakeClock()
	tags := []deployment.Tag{tg(H, 0, "int16")}
	tags[0].Writable = true
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clock)
	ctx := ctxT(t)
	if h := d.Health(); h.State != drivers.StateDisconnected || !h.RetryAt.IsZero() {
		t.Fatalf("health before anything %+v", h)
	}

	ms := time.Millisecond
	waits := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms}
	for k, wait := range waits {
		rs, err := d.Read(ctx)
		if !errors.Is(err, drivers.ErrCommunication) || rs[0].Status != ua.StatusBadNoCommunication {
			t.Fatalf("connect %d: %v, %+v", k+1, err, rs)
		}
		h := d.Health()
		if st := d.Stats(); st.Connects != uint64(k+1) || h.State != drivers.StateDisconnected || !h.RetryAt.Equal(clock.Now().Add(wait)) {
			t.Fatalf("after connect %d: connects %d, health %+v, want retry in %v", k+1, st.Connects, h, wait)
		}
		clock.Advance(wait - 1)
		if _, err := d.Read(ctx); !errors.Is(err, drivers.ErrNotConnected) {
			t.Fatalf("read in back-off: %v", err)
		}
		if err := d.Write(ctx, tags[0].Name, 1); !errors.Is(err, drivers.ErrNotConnected) || drivers.StatusOf(err) != ua.StatusBadCommunicationError {
			t.Fatalf("write in back-off: %v", err)
		}
		if st := d.Stats(); st.Connects != uint64(k+1) {
			t.Fatalf("connected during the back-off: %+v", st)
		}
		clock.Advance(1)
	}

	dev := newDevice()
	serve(t, dev, addr)
	if rs, err := d.Read(ctx); err != nil || rs[0].Status != ua.StatusGood {
		t.Fatalf("with a server: %+v, %v", rs, err)
	}
	if h := d.Health(); h.State != drivers.StateConnected || !h.RetryAt.IsZero() || h.LastError != nil {
		t.Fatalf("health %+v", h)
	}
	dev.set(func(dev *device) {
		dev.refuse = func(string, uint16, uint16, bool) error { return errors.New("not a modbus error") } // exception 04
	})
	// A connection that breaks after the device answered backs off 100 ms.
	d.mu.Lock()
	s := d.sess
	d.mu.Unlock()
	s.users++
	d.release(s, true, fmt.Errorf("%w: test", drivers.ErrCommunication))
	if h := d.Health(); h.State != drivers.StateDisconnected || !h.RetryAt.Equal(clock.Now().Add(100*ms)) {
		t.Fatalf("after a broken connection: %+v", h)
	}
	if err := d.Connect(ctx); err != nil { // Connect ignores the back-off
		t.Fatal(err)
	}
	rs, _ := d.Read(ctx)
	if rs[0].Status != ua.StatusBadDeviceFailure || rs[0].Value != int16(0) {
		t.Fatalf("after an exception: %+v", rs)
	}
}

// TestUnitId: requests carry the device's unit id (default 1).
func TestUnitId(t *testing.T) {
	dev := newDevice()
	addr := freeAddr(t)
	serve(t, dev, addr)
	for _, unit := range []*int{nil, ptr(7), ptr(0), ptr(255)} {
		d := newDriver(t, deployment.Device{Address: addr, UnitId: unit, Tags: []deployment.Tag{tg(H, 0, "int16")}}, clockwork.NewFakeClock())
		if _, err := d.Read(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		want := uint8(1)
		if unit != nil {
			want = uint8(*unit)
		}
		dev.mu.Lock()
		n := dev.units[want]
		dev.units = map[uint8]int{}
		dev.mu.Unlock()
		if n != 1 {
			t.Errorf("unit %d: %d requests", want, n)
		}
		d.Close()
	}
}

func TestNewRefuses(t *testing.T) {
	ok := []deployment.Tag{tg(H, 0, "int16")}
	for _, c := range []struct {
		name string
		dev  deployment.Device
	}{
		{"no address", deployment.Device{Tags: ok}},
		{"no port", deployment.Device{Address: "127.0.0.1", Tags: ok}},
		{"unit id 256", deployment.Device{Address: "127.0.0.1:502", UnitId: ptr(256), Tags: ok}},
		{"unit id -1", deployment.Device{Address: "127.0.0.1:502", UnitId: ptr(-1), Tags: ok}},
		{"other driver", deployment.Device{Driver: "simulated", Address: "127.0.0.1:502", Tags: ok}},
		{"duplicate tag", deployment.Device{Address: "127.0.0.1:502", Tags: []deployment.Tag{tg(H, 0, "int16"), tg(H, 0, "int16")}}},
		{"bad tag", deployment.Device{Address: "127.0.0.1:502", Tags: []deployment.Tag{tg(C, 0, "int16")}}},
	} {
		if _, err := New(c.dev, drivers.Options{Logger: quiet}); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	d, err := New(deployment.Device{Driver: deployment.DriverModbusTCP, Address: "127.0.0.1:1"}, drivers.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if rs, err := d.Read(context.Background()); err != nil || len(rs) != 0 {
		t.Fatalf("a device without tags: %v, %v", rs, err)
	}
	d.Close()
	if _, err := d.Read(context.Background()); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}

// TestConcurrentReadsAndWrites: a Poller and writers on several goroutines
// share the one connection; every write lands (run with -race).
func TestConcurrentReadsAndWrites(t *testing.T) {
	dev := newDevice()
	addr := freeAddr(t)
	serve(t, dev, addr)
	var tags []deployment.Tag
	for k := 0; k < 8; k++ {
		tag := tg(H, k*2, "uint32")
		tag.Writable = true
		tags = append(tags, tag)
	}
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clockwork.NewRealClock())
	ctx, cancel := context.WithCancel(context.Background())
	p := &drivers.Poller{Driver: d, Interval: time.Millisecond, Sink: drivers.SinkFunc(func(drivers.Poll) {})}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var wg sync.WaitGroup
	for k := range tags {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := uint32(1); v <= 20; v++ {
				if err := d.Write(ctx, tags[k].Name, v*1000+uint32(k)); err != nil {
					t.Error(err)
					return
				}
				_ = d.Stats()
				_ = d.Health()
			}
		}()
	}
	wg.Wait()
	cancel()
	<-done
	rs, err := d.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range rs {
		if r.Value != uint32(20000+k) {
			t.Errorf("tag %d: %v", k, r.Value)
		}
	}
	if st := d.Stats(); st.WritesOK != 160 || st.Connects != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestCloseDuringARequest: Close returns at once while a request is on the
// wire; the request's goroutine closes the connection when it ends, and the
// poll sends nothing more.
func TestCloseDuringARequest(t *testing.T) {
	dev := newDevice()
	addr := freeAddr(t)
	serve(t, dev, addr)
	tags := []deployment.Tag{tg(H, 0, "int16"), tg(C, 0, "bool")}
	tags[0].Writable = true
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags, Timeout: deployment.Duration(5 * time.Second)}, clockwork.NewRealClock())
	if err := d.Connect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	dev.set(func(dev *device) { dev.block = block })
	read := make(chan error, 1)
	go func() {
		_, err := d.Read(context.Background())
		read <- err
	}()
	var s *session
	checkFor(t, 5*time.Second, time.Millisecond, func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.sess == nil || d.sess.users == 0 {
			return errors.New("no request in flight")
		}
		s = d.sess
		return nil
	})
	start := time.Now()
	d.Close()
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Close took %v with a request in flight", took)
	}
	if err := d.Write(context.Background(), tags[0].Name, 1); !errors.Is(err, drivers.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
	d.mu.Lock()
	closedEarly := s.closed
	d.mu.Unlock()
	if closedEarly {
		t.Fatal("Close closed the connection under a request")
	}
	close(block)
	if err := <-read; !errors.Is(err, drivers.ErrClosed) {
		t.Errorf("the Read that Close interrupted: %v", err)
	}
	if h, c := dev.readLog(H), dev.readLog(C); len(h) != 1 || len(c) != 0 {
		t.Errorf("requests after Close: holding %v, coils %v", h, c)
	}
	d.mu.Lock()
	closed := s.closed
	d.mu.Unlock()
	if !closed {
		t.Fatal("the connection stayed open after its last request")
	}
	if _, err := d.Read(context.Background()); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := d.Connect(context.Background()); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Connect after Close: %v", err)
	}
	if h := d.Health(); h.State != drivers.StateClosed {
		t.Fatalf("health %+v", h)
	}
}

// TestFirstPollAfterTheDeviceStops: the poll that finds the connection
// broken marks every tag of that poll BadCommunicationError at once, the
// failed request's and those after it, keeping their values.
func TestFirstPollAfterTheDeviceStops(t *testing.T) {
	dev := newDevice()
	dev.holding[0], dev.input[0], dev.coils[0] = 7, 8, true
	addr := freeAddr(t)
	srv := serve(t, dev, addr)
	tags := []deployment.Tag{tg(H, 0, "int16"), tg(I, 0, "int16"), tg(C, 0, "bool")}
	clock := clockwork.NewFakeClock()
	d := newDriver(t, deployment.Device{Address: addr, Tags: tags}, clock)
	ctx := ctxT(t)
	if _, err := d.Read(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	clock.Advance(time.Second)
	rs, err := d.Read(ctx)
	if !errors.Is(err, drivers.ErrCommunication) {
		t.Fatalf("Read: %v", err)
	}
	want := []any{int16(7), int16(8), true}
	for i, r := range rs {
		if r.Status != ua.StatusBadCommunicationError || r.Value != want[i] || !r.SourceTime.Equal(drivers.PolledTime(clock.Now())) {
			t.Errorf("tag %d: %+v", i, r)
		}
	}
	if st := d.Stats(); st.ReadsOK != 3 || st.ReadsFailed != 3 || st.Connected {
		t.Errorf("stats %+v", st)
	}
	if h := d.Health(); h.State != drivers.StateDisconnected || !h.RetryAt.Equal(clock.Now().Add(drivers.BackoffMin)) {
		t.Errorf("health %+v", h)
	}
}

// TestGuard: a panic of the client becomes a protocol error, which drops
// the connection like any malformed answer.
func TestGuard(t *testing.T) {
	err := func() (err error) {
		defer guard(&err)
		var words []uint16
		_ = words[3]
		return nil
	}()
	if out, _ := classify(err); !errors.Is(err, mb.ErrProtocolError) || out != broken {
		t.Fatalf("guarded panic: %v (%v)", err, out)
	}
	if err := func() (err error) { defer guard(&err); return nil }(); err != nil {
		t.Fatalf("no panic: %v", err)
	}
}
