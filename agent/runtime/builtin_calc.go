package runtime

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits of the calculator, so that a message cannot make it work hard:
// the input is short and the recursion shallow.
const (
	calcMaxInput = 256
	calcMaxDepth = 64
)

// calcHelp says what the calculator understands; it ends every reply about
// input it could not read.
const calcHelp = "I understand numbers (like 3 or 2.5), + - * / % ^ and parentheses, for example: (2 + 3) * 4 ^ 2"

// Calculator failures that get their own reply.
var (
	errCalcDivZero = errors.New("cannot divide by zero")
	errCalcTooDeep = errors.New("nested too deeply")
)

// calcSyntaxError says where the input stopped making sense.
type calcSyntaxError struct {
	msg string
	pos int // 1-based, in runes of the normalised input
}

func (e *calcSyntaxError) Error() string { return fmt.Sprintf("%s at position %d", e.msg, e.pos) }

// calcNormalise accepts the usual typographic operators and a trailing "=".
var calcNormalise = strings.NewReplacer("×", "*", "÷", "/", "−", "-", "**", "^")

// calculatorReply evaluates text and phrases the result or the problem.
func calculatorReply(text string) string {
	expr := strings.TrimSpace(text)
	if len(expr) > calcMaxInput {
		return fmt.Sprintf("That expression is too long; I read up to %d characters.", calcMaxInput)
	}
	expr = strings.TrimSpace(strings.TrimSuffix(calcNormalise.Replace(expr), "="))
	if expr == "" {
		return "Give me an arithmetic expression. " + calcHelp + "."
	}
	v, err := calculate(expr)
	var se *calcSyntaxError
	switch {
	case errors.Is(err, errCalcDivZero):
		return "I cannot divide by zero."
	case errors.Is(err, errCalcTooDeep):
		return fmt.Sprintf("That expression is nested too deeply; I go %d levels down.", calcMaxDepth)
	case errors.As(err, &se):
		return fmt.Sprintf("I could not read that: %s. %s.", se.Error(), calcHelp)
	case math.IsNaN(v):
		return "The result is not a real number."
	case math.IsInf(v, 0):
		return "The result is too large for me."
	}
	return formatNumber(v)
}

// formatNumber prints integers exactly and other values to 15 significant
// digits, so 0.1 + 0.2 reads 0.3.
func formatNumber(v float64) string {
	if v == 0 {
		return "0" // and not -0
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 15, 64)
}

// calculate parses and evaluates expr by recursive descent:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ "^" unary ]      (right-associative; -2^2 = -4)
//	primary = number | "(" expr ")"
func calculate(expr string) (float64, error) {
	p := &calcParser{s: []rune(expr)}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	p.skipSpace()
	if p.pos < len(p.s) {
		return 0, p.syntax(fmt.Sprintf("unexpected %q", p.s[p.pos]))
	}
	return v, nil
}

type calcParser struct {
	s     []rune
	pos   int
	depth int
}

func (p *calcParser) skipSpace() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// peek returns the next non-space rune, or 0 at the end.
func (p *calcParser) peek() rune {
	p.skipSpace()
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *calcParser) syntax(msg string) error {
	return &calcSyntaxError{msg: msg, pos: p.pos + 1}
}

func (p *calcParser) expr() (float64, error) {
	v, err := p.term()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.pos++
		var r float64
		if r, err = p.term(); op == '+' {
			v += r
		} else {
			v -= r
		}
	}
	return 0, err
}

func (p *calcParser) term() (float64, error) {
	v, err := p.unary()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' && op != '%' {
			return v, nil
		}
		p.pos++
		var r float64
		if r, err = p.unary(); err != nil {
			break
		}
		switch {
		case op == '*':
			v *= r
		case r == 0:
			return 0, errCalcDivZero
		case op == '/':
			v /= r
		default:
			v = math.Mod(v, r)
		}
	}
	return 0, err
}

// unary is where the recursion goes deeper (parentheses and signs), so it
// keeps the depth.
func (p *calcParser) unary() (float64, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > calcMaxDepth {
		return 0, errCalcTooDeep
	}
	switch p.peek() {
	case '-':
		p.pos++
		v, err := p.unary()
		return -v, err
	case '+':
		p.pos++
		return p.unary()
	}
	return p.power()
}

func (p *calcParser) power() (float64, error) {
	base, err := p.primary()
	if err != nil || p.peek() != '^' {
		return base, err
	}
	p.pos++
	exp, err := p.unary()
	return math.Pow(base, exp), err
}

func (p *calcParser) primary() (float64, error) {
	switch c := p.peek(); {
	case c == 0:
		return 0, p.syntax("the expression ends too early")
	case c == '(':
		p.pos++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, p.syntax(`missing ")"`)
		}
		p.pos++
		return v, nil
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	default:
		return 0, p.syntax(fmt.Sprintf("unexpected %q", c))
	}
}

// number reads digits with at most one decimal point.
func (p *calcParser) number() (float64, error) {
	start, dot := p.pos, false
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '.' && !dot {
			dot = true
		} else if c < '0' || c > '9' {
			break
		}
		p.pos++
	}
	v, err := strconv.ParseFloat(string(p.s[start:p.pos]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: ±Inf, "too large"
		p.pos = start
		return 0, p.syntax("a malformed number")
	}
	return v, nil
}
