// Package aggregate computes OPC UA Part 13 aggregates over raw history for
// otopcua's HistoryRead service (ReadProcessedDetails, Part 11 §6.4.4): it
// lays out the processing intervals of a request and computes one
// aggregate value per interval from the raw values the caller read from
// the archive. It is pure: no I/O, no clock, no goroutines, no state; every
// function may be called from any goroutine at once.
//
// The aggregates (Kind) are Interpolative, Average, TimeAverage, Minimum,
// Maximum, MinimumActualTime, MaximumActualTime, Range, Count, Start, End,
// Delta, DurationGood, DurationBad, PercentGood and PercentBad, each as its
// summary table in Part 13 §5.4.3 (1.05) describes it. Section numbers
// below are those of Part 13 1.05 unless another part is named.
//
// # The caller's duties
//
//  1. Map the request. KindOf gives the Kind of an aggregateType NodeId;
//     false means Bad_AggregateNotSupported. Build a Config from the
//     AggregateConfiguration (DefaultConfig when useServerDefaults),
//     reject it with Bad_AggregateConfigurationRejected when
//     Config.Validate fails, and fill in the variable's Stepped property
//     and, when the archive knows them, DataStart (time of its first value
//     of the variable) and DataEnd (time up to which it is complete,
//     usually its last value). Zero DataStart/DataEnd mean unknown: no
//     interval is then "Before Start of Data" or "After End of Data", and
//     missing values are judged from the samples alone.
//  2. Lay out the intervals with Intervals. ErrInvalidArgument answers
//     Bad_InvalidArgument (startTime = endTime), ErrTooManyIntervals
//     answers Bad_TooManyOperations. Results go out in the order of the
//     intervals, which is the direction of time of the request.
//  3. Supply raw values, sorted by time ascending (equal times keep their
//     order; Compute never sorts and gives unspecified results on unsorted
//     input). For an interval whose earlier end is lo and later end hi
//     (lo = min(Start, End), hi = max(Start, End)) the samples must hold:
//     every value between lo and hi, both included; before lo, every value
//     back to and including the second-latest usable value before lo;
//     after hi, every value up to and including the first usable value
//     after hi. Usable means not Bad, and not Uncertain when
//     TreatUncertainAsBad is set. Where the archive has fewer such values,
//     supply everything back to its start or on to its end. Window returns
//     exactly this part of a longer run; one run may serve many intervals,
//     since Compute finds its interval by binary search. The caller
//     decides how far back and ahead it reads: Part 13 §5.4.3.4 asks for
//     at least one processing interval; a value further away that is not
//     supplied is taken not to exist (the bound is then missing or
//     extrapolated).
//  4. Convert each Result. At is the SourceTimestamp. Value is a float64:
//     the caller casts it back to the variable's type for the aggregates
//     whose data type is "Same as Source" (Interpolative, Minimum,
//     Maximum, the ActualTime pair, Range, Start, End, Delta), reports
//     Average, TimeAverage and the Percent pair as Double, DurationGood and
//     DurationBad as Duration (Double, milliseconds) and Count as Int32.
//     When Raw ≥ 0 the value is that sample's, returned as is, and the
//     caller may return the archived Variant itself. When Status is Bad
//     there is no value.
//
// # Values and their status
//
// A raw value is Good, Uncertain or Bad by the severity of its StatusCode.
// TreatUncertainAsBad decides whether Uncertain values are usable (§4.2.1.2,
// §3.1.7); an Uncertain value that is used makes the result
// Uncertain_DataSubNormal at best ("still treated as Uncertain",
// §4.2.1.2). The value of a Bad raw value is never used.
//
// Every result that is not Bad carries InfoTypeDataValue and one data
// location (HistorianRaw, HistorianCalculated, HistorianInterpolated),
// plus HistorianPartial and HistorianMultiValue as the aggregate's table
// says (§5.3.3; the bits are laid out in Part 4's StatusCode). A Bad result
// is the bare Bad_NoData — or, for Start and End, the Bad raw value's own
// code with the Raw location; Compute answers Bad_InvalidArgument for an
// interval of zero length and Bad_AggregateNotSupported for a value that is
// not a Kind.
// HistorianExtraData is never set: the archive keeps one value per
// timestamp.
//
// Three status calculations are used (§5.4.3.2.1):
//
//   - PercentValues (Average, Count): counts of usable and unusable values
//     in the interval. Good when the usable ones reach PercentDataGood
//     percent, else Bad_NoData when the unusable ones reach PercentDataBad
//     percent, else Uncertain_DataSubNormal. Good is tested first: when
//     PercentDataGood = 100 − PercentDataBad both tests can pass at once,
//     and §4.2.1.2 (and the 1.05 fix of Mantis 6227) gives Good the
//     precedence; a configuration where both could pass otherwise fails
//     Validate.
//   - Time-weighted (TimeAverage): the same tests on time instead of
//     counts. Time without data (before the first usable value when there
//     is no start bound) counts against PercentDataBad; time with data
//     counts towards PercentDataGood. Time whose line is derived — across
//     skipped unusable values, from or to an Uncertain value or bound, or
//     extrapolated — counts as time with data but lowers Good to
//     Uncertain_DataSubNormal, which is what the TimeAverage table says
//     ("Uncertain if Bad values are skipped or if Uncertain values are
//     used", "Extrapolate data, Uncertain status"). Treating derived time
//     as Bad under TreatUncertainAsBad, as a literal reading of
//     §5.4.3.2.1 could suggest, would turn every extrapolated interval Bad
//     under the default configuration, against the table.
//   - Custom (the others), as each table states; PercentDataGood and
//     PercentDataBad do not apply to them.
//
// # Intervals and the special cases
//
// Intervals follows Table 12 (§5.4.2.2). A processing interval longer than
// the range gives one interval marked Partial (it is shorter than asked);
// a processing interval equal to the range or 0 gives one complete
// interval. An interval holds its Start and excludes its End, in both
// directions of time. Times are exact to the nanosecond, so the
// EffectiveEndTime of §5.4.2.4 is never needed: no aggregate here reports
// the time of an end bound.
//
// Partial (§5.3.3.2) is set, where the aggregate's table allows it, when
// the interval is the short last one, when it straddles DataStart, or when
// it reaches past DataEnd; TimeAverage also sets it when it has no start
// bound. Interpolative and Average never set it (their tables, §5.4.3.4
// and §5.4.3.5, say "Not Set").
//
// "Before Start of Data" is an interval that ends at or before DataStart,
// "After End of Data" one that starts after DataEnd. Both give Bad_NoData,
// except that Interpolative and TimeAverage extrapolate after the end of
// data (Uncertain_DataSubNormal), as their tables say.
//
// When time flows backward (Start > End) every aggregate is computed over
// the same chronological stretch as forward — only which end is included
// changes — and reported at the interval's Start. "Earliest", "latest" and
// "oldest" keep their chronological meaning: Start is the oldest value
// inside, End the newest, Delta is newest − oldest, and equal extremes
// report the oldest.
//
// # Bounding values (§3.1.8)
//
// Interpolative and TimeAverage use Interpolated Bounding Values. A usable
// raw value on the timestamp is the bound, with its own status. Otherwise
// the bound is drawn from the last usable value before the timestamp (none:
// no bound, Bad_NoData) and the first usable value after it: on the line
// between them, or holding the value before when the variable is Stepped.
// It is Uncertain_DataSubNormal when unusable values were skipped between
// the two (for a stepped variable, between the value before and the
// timestamp) or when a value it is drawn from is Uncertain. Without a
// usable value after the timestamp the bound is extrapolated and always
// Uncertain_DataSubNormal: along the line through the last two usable
// values when UseSlopedExtrapolation is set and the variable is not
// Stepped (a stepped variable is always held; §3.1.8 leaves this open),
// else — or when only one usable value exists — by holding the last one.
// The search for values goes as far as the supplied samples reach.
//
// # The aggregates
//
//   - Interpolative (§5.4.3.4): the bound at Start; Raw on a raw hit (Raw
//     is its index), Interpolated otherwise.
//   - Average (§5.4.3.5): mean of the usable values inside; PercentValues;
//     Bad_NoData without a usable value.
//   - TimeAverage (§5.4.3.6): area under the line from the start bound
//     through the usable values inside to the end bound, divided by the
//     time the line covers. The line is always sloped between its points,
//     as §5.4.3.6 states ("TimeAverage2 uses a stepped or sloped line");
//     the Stepped property changes only the bounds. Without a start bound
//     the line starts at the first usable value inside ("Calculate Partial
//     Interval") and the average is over the time it covers; with no
//     usable value at all the result is Bad_NoData.
//   - Minimum, Maximum, MinimumActualTime, MaximumActualTime
//     (§5.4.3.10–13): only Good values compete, whatever
//     TreatUncertainAsBad says ("minimum Good raw value"; Annex A.11 gives
//     Bad_NoData for an interval holding only an Uncertain value). The
//     status is Uncertain_DataSubNormal when a Bad value lies inside, when
//     an Uncertain one does and TreatUncertainAsBad is set, or when an
//     Uncertain value lies beyond the Good extreme; Good otherwise.
//     Minimum and Maximum report the interval's Start, with Raw when the
//     extreme lies on Start and the status is Good, Calculated otherwise.
//     The ActualTime pair reports the time of the oldest value holding the
//     extreme, Raw when Good, Calculated when Uncertain_DataSubNormal.
//     MultiValue marks more than one Good value holding the extreme.
//   - Range (§5.4.3.14): Maximum − Minimum of the Good values, Uncertain
//     when either is; 0 for one value.
//   - Count (§5.4.3.21): number of usable values inside; PercentValues; an
//     interval without values (inside the archive's data) counts 0, Good.
//   - Start, End (§5.4.3.25–26): the oldest or newest raw value inside,
//     whatever its status, with its own timestamp and status and the Raw
//     location.
//   - Delta (§5.4.3.27): newest − oldest Good value inside; Uncertain when
//     non-Good values precede the oldest or follow the newest Good one
//     inside (TreatUncertainAsBad changes nothing: an Uncertain value is
//     never Good).
//   - DurationGood, DurationBad, PercentGood, PercentBad (§5.4.3.31–34):
//     regions start at each raw value inside and take its status; the
//     first takes the status of the last value at or before lo, and is Bad
//     when there is none. Good regions count for DurationGood; Bad
//     regions, and Uncertain ones under TreatUncertainAsBad, for
//     DurationBad. Uncertain regions otherwise count for neither, so the
//     two durations add up to the interval's width exactly when
//     TreatUncertainAsBad is set. Time before DataStart or after DataEnd
//     has no data and counts as Bad. Durations in milliseconds, percentages
//     of the interval's width (the short one for a Partial interval);
//     always Good, Calculated.
//
// The tests replay the Part 13 Annex A examples that pin these rules
// (Interpolative A.2.2 and MaximumActualTime A.11.2 on Historians 1 and 2,
// TimeAverage by hand on Historian 2 with the interval the OPC Foundation
// confirmed for A.4.2) next to hand-computed tables, and property tests
// check the invariants, Interpolative against a brute-force reading of
// §3.1.8, and Window against the whole run.
package aggregate
