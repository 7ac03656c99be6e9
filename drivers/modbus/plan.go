package modbus

import (
	"errors"
	"fmt"
	"sort"

	"github.com/otopcua/otopcua/deployment"
)

// Limits bound the read requests of a plan.
type Limits struct {
	// MaxRegisters is the most holding or input registers one request
	// reads, 4–125 (125 is the protocol's limit for function codes 03 and
	// 04; 4 is the widest tag, a float64).
	MaxRegisters int
	// MaxBits is the most coils or discrete inputs one request reads,
	// 1–2000 (the protocol's limit for function codes 01 and 02).
	MaxBits int
	// MaxGap is the most consecutive unused addresses a request may span
	// between two tags, ≥ 0: reading a few registers nobody asked for is
	// cheaper than another round trip.
	MaxGap int
}

// DefaultLimits are the limits of a driver's plan: the protocol's maxima and
// a gap of at most 8 addresses.
var DefaultLimits = Limits{MaxRegisters: 125, MaxBits: 2000, MaxGap: 8}

// Request is one planned read: Count addresses of Table from Start.
type Request struct {
	// Table is a deployment.Table* name.
	Table string
	// Start is the first address read, Count how many (registers or bits).
	Start, Count uint16
	// Tags are the indexes (into the planned tag slice) of the tags this
	// request reads, by address, then index.
	Tags []int
}

// End is the last address the request reads.
func (r Request) End() int { return int(r.Start) + int(r.Count) - 1 }

// tableOrder is the order of the tables in a plan.
var tableOrder = []string{deployment.TableHolding, deployment.TableInput, deployment.TableCoil, deployment.TableDiscrete}

// Plan returns the fewest read requests that cover tags under lim. It is a
// pure function of its arguments.
//
// The merge rule: per table, tags sorted by address are taken in order; a
// tag joins the current request when the unused addresses between the
// request's end and the tag's start are at most lim.MaxGap (0 = adjacent;
// overlapping and duplicate tags always join) and the request, grown to
// the tag's end, stays within lim.MaxRegisters (holding, input) or
// lim.MaxBits (coil, discrete); otherwise the tag starts a new request. A tag
// is never split across requests. Requests come table by table (holding,
// input, coil, discrete), each table's by address.
//
// For tags that do not overlap this greedy cover is the fewest requests the
// rule allows; so every tag is in exactly one request. Plan fails, naming the
// tag, on a tag without a known table, with a type the table cannot hold,
// an unknown word order, or an address range outside 0–65535; and on limits
// outside the ranges above.
func Plan(tags []deployment.Tag, lim Limits) ([]Request, error) {
	if err := lim.check(); err != nil {
		return nil, err
	}
	spans := make(map[string][]span, len(tableOrder))
	for i, t := range tags {
		s, err := spanOf(t)
		if err != nil {
			return nil, fmt.Errorf("tag %d (%q): %w", i, t.Name, err)
		}
		s.tag = i
		spans[t.Table] = append(spans[t.Table], s)
	}
	var plan []Request
	for _, table := range tableOrder {
		ss := spans[table]
		sort.SliceStable(ss, func(a, b int) bool { return ss[a].start < ss[b].start })
		plan = append(plan, group(table, ss, lim.MaxGap, lim.limit(table))...)
	}
	return plan, nil
}

// SplitAtGaps returns req's tags regrouped so that no request reads an
// address no tag uses: req itself when it has no gap. The driver uses it
// when a device refuses a merged request with Illegal Data Address because
// a gap is an address it does not have. tags are the planned tags.
func SplitAtGaps(req Request, tags []deployment.Tag) []Request {
	ss := make([]span, 0, len(req.Tags))
	for _, i := range req.Tags {
		if i < 0 || i >= len(tags) {
			return []Request{req}
		}
		s, err := spanOf(tags[i])
		if err != nil {
			return []Request{req}
		}
		s.tag = i
		ss = append(ss, s)
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].start < ss[b].start })
	return group(req.Table, ss, 0, int(req.Count))
}

// span is the addresses [start, end] one tag occupies.
type span struct {
	tag        int
	start, end int
}

// group is the greedy cover of spans (sorted by start) under the merge rule.
func group(table string, ss []span, maxGap, limit int) []Request {
	var out []Request
	for k := 0; k < len(ss); {
		start, end := ss[k].start, ss[k].end
		req := Request{Table: table, Tags: []int{ss[k].tag}}
		for k++; k < len(ss); k++ {
			s := ss[k]
			newEnd := max(end, s.end)
			if s.start-end-1 > maxGap || newEnd-start+1 > limit {
				break
			}
			end = newEnd
			req.Tags = append(req.Tags, s.tag)
		}
		req.Start, req.Count = uint16(start), uint16(end-start+1)
		out = append(out, req)
	}
	return out
}

func (lim Limits) check() error {
	if lim.MaxRegisters < 4 || lim.MaxRegisters > 125 {
		return fmt.Errorf("modbus: MaxRegisters %d outside 4–125", lim.MaxRegisters)
	}
	if lim.MaxBits < 1 || lim.MaxBits > 2000 {
		return fmt.Errorf("modbus: MaxBits %d outside 1–2000", lim.MaxBits)
	}
	if lim.MaxGap < 0 {
		return fmt.Errorf("modbus: MaxGap %d below 0", lim.MaxGap)
	}
	return nil
}

func (lim Limits) limit(table string) int {
	if isBitTable(table) {
		return lim.MaxBits
	}
	return lim.MaxRegisters
}

func isBitTable(table string) bool {
	return table == deployment.TableCoil || table == deployment.TableDiscrete
}

// spanOf checks that t can be read and returns the addresses it occupies.
func spanOf(t deployment.Tag) (span, error) {
	switch t.Table {
	case deployment.TableCoil, deployment.TableDiscrete:
		if t.Type != deployment.TypeBool {
			return span{}, fmt.Errorf("type %q in table %q: only bool", t.Type, t.Table)
		}
	case deployment.TableHolding, deployment.TableInput:
		if Width(t.Type) == 0 || t.Type == deployment.TypeBool {
			return span{}, fmt.Errorf("type %q in table %q: int16, uint16, int32, uint32, float32 or float64", t.Type, t.Table)
		}
	default:
		return span{}, fmt.Errorf("table %q: holding, input, coil or discrete", t.Table)
	}
	switch t.WordOrder {
	case "", deployment.WordOrderBig, deployment.WordOrderLittle:
	default:
		return span{}, fmt.Errorf("word order %q: big or little", t.WordOrder)
	}
	if t.Address == nil {
		return span{}, errors.New("no address")
	}
	a, w := *t.Address, Width(t.Type)
	if a < 0 || a > 0xffff || a+w-1 > 0xffff {
		return span{}, fmt.Errorf("address %d: %d addresses from it must lie in 0–65535", a, w)
	}
	return span{start: a, end: a + w - 1}, nil
}

// Width is how many registers a value of type typ occupies (1 for bool, a
// coil or discrete input), 0 for an unknown type.
func Width(typ string) int {
	switch typ {
	case deployment.TypeBool, deployment.TypeInt16, deployment.TypeUint16:
		return 1
	case deployment.TypeInt32, deployment.TypeUint32, deployment.TypeFloat32:
		return 2
	case deployment.TypeFloat64:
		return 4
	}
	return 0
}
