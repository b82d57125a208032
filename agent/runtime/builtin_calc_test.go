package runtime

import (
	"strings"
	"testing"
)

func TestCalculator(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1 + 2", "3"},
		{"2 + 3 * 4", "14"},
		{"(2 + 3) * 4", "20"},
		{"10 - 4 - 3", "3"},   // left-associative
		{"100 / 10 / 5", "2"}, // left-associative
		{"2 ^ 3 ^ 2", "512"},  // right-associative
		{"(2 ^ 3) ^ 2", "64"},
		{"-2 ^ 2", "-4"}, // ^ binds tighter than unary minus
		{"(-2) ^ 2", "4"},
		{"2 ^ -1", "0.5"},
		{"--3", "3"},
		{"-(4 - 6)", "2"},
		{"+5", "5"},
		{"7 % 3", "1"},
		{"-7 % 3", "-1"},
		{"5.5 % 2", "1.5"},
		{"0.1 + 0.2", "0.3"},
		{".5 * 4", "2"},
		{"1 / 3", "0.333333333333333"},
		{"2 × 3 ÷ 4", "1.5"},
		{"2 ** 10", "1024"},
		{"  ( ( 1 ) )  ", "1"},
		{"6 * 7 =", "42"},
		{"0 * -1", "0"},
		{"123456789 * 1000", "123456789000"},
		{"10 ^ 20", "1e+20"},
	} {
		if got := calculatorReply(tc.in); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCalculatorFriendlyErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1 / 0", "cannot divide by zero"},
		{"5 % (2 - 2)", "cannot divide by zero"},
		{"", "Give me an arithmetic expression"},
		{"what is 2+2?", `unexpected 'w' at position 1`},
		{"2 +", "ends too early"},
		{"(1 + 2", `missing ")"`},
		{"1 + 2)", `unexpected ')' at position 6`},
		{"1.2.3", `unexpected '.'`},
		{".", "malformed number"},
		{"2 (3)", `unexpected '('`},
		{"x = 3", `unexpected 'x'`},
		{"10 ^ 400", "too large"},
		{"(-8) ^ 0.5", "not a real number"},
		{strings.Repeat("9", 400), "too long"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "nested too deeply"},
		{strings.Repeat("-", 200) + "1", "nested too deeply"},
	} {
		got := calculatorReply(tc.in)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q: reply %q, want it to contain %q", tc.in, got, tc.want)
		}
		if strings.Contains(tc.want, "unexpected") && !strings.Contains(got, "I understand") {
			t.Errorf("%q: reply %q does not say what the calculator understands", tc.in, got)
		}
	}
}

func TestCalculatorDepthLimit(t *testing.T) {
	ok := strings.Repeat("(", calcMaxDepth-1) + "1" + strings.Repeat(")", calcMaxDepth-1)
	if got := calculatorReply(ok); got != "1" {
		t.Fatalf("%d levels: %q", calcMaxDepth-1, got)
	}
	deep := strings.Repeat("(", calcMaxDepth) + "1" + strings.Repeat(")", calcMaxDepth)
	if got := calculatorReply(deep); !strings.Contains(got, "nested too deeply") {
		t.Fatalf("%d levels: %q", calcMaxDepth, got)
	}
}

func FuzzCalculator(f *testing.F) {
	for _, s := range []string{"1+2", "2^3^2", "-(1.5%0.2)", "((((", "1/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if calculatorReply(s) == "" {
			t.Fatalf("empty reply for %q", s)
		}
	})
}
