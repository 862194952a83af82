package receipt

import (
	"strconv"
	"strings"
)

// The range rule for Numbers, checked on the literal text: the exact
// decimal value must be below 10^MaxIntDigits in magnitude and have at most
// MaxFracDigits digits after the decimal point once trailing zeros are
// dropped. That covers any amount a till handles, and the float artefacts
// some POS software prints (0.30000000000000004), while refusing 1e400 or
// 1e-400 that no upstream parser reads back exactly.
const (
	MaxIntDigits  = 15
	MaxFracDigits = 18
)

// maxExpDigits bounds the exponent text we convert; beyond it any non-zero
// value is out of range whatever the mantissa (the body is at most a few
// MiB, so the mantissa cannot make up for a 5-digit exponent).
const maxExpDigits = 4

var (
	problemTooBig     = "out of range: magnitude must be below 1e" + strconv.Itoa(MaxIntDigits)
	problemTooPrecise = "out of range: at most " + strconv.Itoa(MaxFracDigits) + " digits after the decimal point"
)

// numberProblem returns "" when lit, a valid JSON number literal, is within
// the range rule, else the problem to report. It never converts to float.
func numberProblem(lit string) string {
	// Most of a receipt's numbers: no more characters than MaxIntDigits
	// and no exponent, so fewer digits before the point than MaxIntDigits
	// and after it than MaxFracDigits.
	if len(lit) <= min(MaxIntDigits, MaxFracDigits) && !hasExponent(lit) {
		return ""
	}
	return rangeProblem(lit)
}

// hasExponent reports whether lit, a JSON number literal, has an e or E.
func hasExponent(lit string) bool {
	for i := range len(lit) {
		if lit[i]|0x20 == 'e' {
			return true
		}
	}
	return false
}

// rangeProblem is numberProblem for any literal: the digits counted.
func rangeProblem(lit string) string {
	s := strings.TrimPrefix(lit, "-")
	mant, expText, hasExp := strings.Cut(s, "e")
	if !hasExp {
		mant, expText, hasExp = strings.Cut(s, "E")
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	// The significant digits are those of intPart+frac without leading and
	// trailing zeros; counted in place, as this runs for every number of
	// every receipt.
	scale := -len(frac) // value = digits × 10^scale
	lead := strings.TrimLeft(intPart, "0")
	trimmed := strings.TrimRight(frac, "0")
	scale += len(frac) - len(trimmed)
	if trimmed == "" {
		trimmed = strings.TrimRight(lead, "0")
		scale += len(lead) - len(trimmed)
		lead = ""
	} else if lead == "" {
		trimmed = strings.TrimLeft(trimmed, "0")
	}
	digits := len(lead) + len(trimmed)
	if digits == 0 {
		return "" // zero, whatever the exponent
	}
	if hasExp {
		negExp := strings.HasPrefix(expText, "-")
		expText = strings.TrimLeft(strings.TrimLeft(expText, "+-"), "0")
		if len(expText) > maxExpDigits {
			if negExp {
				return problemTooPrecise
			}
			return problemTooBig
		}
		exp := 0
		if expText != "" {
			exp, _ = strconv.Atoi(expText) // at most 4 digits: cannot fail
		}
		if negExp {
			exp = -exp
		}
		scale += exp
	}
	if digits+scale > MaxIntDigits {
		return problemTooBig
	}
	if -scale > MaxFracDigits {
		return problemTooPrecise
	}
	return ""
}
