package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// domain is one kind of agent. Weights are skewed (a few domains are
// common, some rare) so that search terms match very different numbers of
// listings, as on a real catalogue.
type domain struct {
	slug    string
	weight  int
	title   []string // display-name nouns
	tags    []string
	does    []string // "an agent that ..." phrases
	skills  []skillWords
	extraKW []string // extra words sprinkled into descriptions
}

type skillWords struct {
	id, name, desc string
	examples       []string
}

var domains = []domain{
	{slug: "weather", weight: 18, title: []string{"Weather", "Forecast", "Climate", "Storm Watch"},
		tags: []string{"weather", "forecast", "climate", "geo", "alerts"},
		does: []string{"forecasts the weather for any city up to ten days ahead", "sends severe weather alerts for storms, heat and frost", "explains weather radar and satellite images in plain words", "answers questions about climate normals and rainfall history"},
		skills: []skillWords{
			{"forecast", "Forecast", "Hourly and daily weather forecast for a place.", []string{"Will it rain in Paris tomorrow?", "Weekend forecast for Denver"}},
			{"alerts", "Weather alerts", "Active warnings for a region.", []string{"Any storm warnings near Miami?"}},
		},
		extraKW: []string{"temperature", "rain", "wind", "humidity", "pollen"}},
	{slug: "translate", weight: 12, title: []string{"Translator", "Lingua", "Polyglot", "Babel"},
		tags: []string{"translation", "language", "nlp", "multilingual"},
		does: []string{"translates text between more than forty languages", "translates documents while keeping their formatting", "localizes app strings and checks terminology", "translates and explains idioms in context"},
		skills: []skillWords{
			{"translate", "Translate", "Translate text to a target language.", []string{"Translate 'good morning' to Spanish", "Say this in Japanese"}},
			{"detect-language", "Detect language", "Names the language of a text.", []string{"What language is 'obrigado'?"}},
		},
		extraKW: []string{"spanish", "french", "german", "japanese", "portuguese", "chinese", "arabic"}},
	{slug: "code", weight: 12, title: []string{"Code Reviewer", "Lint Buddy", "Refactor", "Pair Programmer"},
		tags: []string{"code", "code-review", "developer-tools", "programming"},
		does: []string{"does code review on pull requests and points out bugs", "reviews code for security issues and style", "explains unfamiliar code and suggests refactorings", "writes unit tests for the code you paste"},
		skills: []skillWords{
			{"review", "Code review", "Reviews a diff and comments on it.", []string{"Review this Go function", "Is this SQL query safe?"}},
			{"explain", "Explain code", "Explains what a snippet does.", []string{"What does this regex match?"}},
		},
		extraKW: []string{"python", "go", "rust", "typescript", "java", "github"}},
	{slug: "math", weight: 8, title: []string{"Math Tutor", "Solver", "Calculator", "Algebra Helper"},
		tags: []string{"math", "education", "calculator"},
		does: []string{"solves math problems step by step", "checks algebra and calculus homework", "evaluates arithmetic and unit conversions exactly", "explains statistics and probability with examples"},
		skills: []skillWords{
			{"solve", "Solve", "Solves an equation and shows the steps.", []string{"Solve x^2 - 5x + 6 = 0"}},
			{"convert", "Convert units", "Converts between units.", []string{"3 miles in kilometres"}},
		},
		extraKW: []string{"algebra", "calculus", "geometry", "statistics"}},
	{slug: "finance", weight: 10, title: []string{"Finance Analyst", "Ledger", "Portfolio Watch", "Budget Coach"},
		tags: []string{"finance", "stocks", "accounting", "budget"},
		does: []string{"tracks stock prices and summarizes market news", "builds a monthly budget from your expenses", "reads invoice PDFs and books them into accounting", "forecasts cash flow for small businesses"},
		skills: []skillWords{
			{"quote", "Stock quote", "Latest price of a stock or index.", []string{"How is AAPL doing today?"}},
			{"invoice", "Invoice reader", "Extracts totals and due dates from an invoice.", []string{"When is this invoice due?"}},
		},
		extraKW: []string{"stock", "market", "invoice", "tax", "portfolio", "forecast"}},
	{slug: "travel", weight: 9, title: []string{"Travel Planner", "Trip Agent", "Wayfinder", "Flight Finder"},
		tags: []string{"travel", "booking", "flights", "hotels"},
		does: []string{"plans trips with flights, hotels and a day-by-day itinerary", "finds cheap flights and alerts you when prices drop", "suggests hotels near the places you want to visit", "checks visa rules and travel advisories"},
		skills: []skillWords{
			{"itinerary", "Itinerary", "A day-by-day travel plan.", []string{"Three days in Lisbon"}},
			{"flights", "Flight search", "Finds flights between two airports.", []string{"Flights from Berlin to Rome in May"}},
		},
		extraKW: []string{"booking", "weather", "visa", "airport", "train"}},
	{slug: "writer", weight: 9, title: []string{"Writer", "Summarizer", "Editor", "Copywriter"},
		tags: []string{"writing", "summarization", "nlp", "content"},
		does: []string{"summarizes long articles and reports into key points", "edits drafts for clarity, tone and grammar", "writes product descriptions and marketing copy", "turns meeting notes into a summary with action items"},
		skills: []skillWords{
			{"summarize", "Summarize", "Summarizes a text to a given length.", []string{"Summarize this article in three bullets"}},
			{"rewrite", "Rewrite", "Rewrites text in another tone.", []string{"Make this email more polite"}},
		},
		extraKW: []string{"email", "blog", "report", "grammar"}},
	{slug: "data", weight: 6, title: []string{"Data Analyst", "SQL Helper", "Chart Maker", "Notebook"},
		tags: []string{"data", "analytics", "sql", "python"},
		does: []string{"writes SQL queries from questions in plain English", "cleans CSV files and charts the result", "runs Python notebooks to analyze datasets", "explains dashboards and anomalies in metrics"},
		skills: []skillWords{
			{"sql", "Text to SQL", "Turns a question into SQL.", []string{"Top ten customers by revenue last quarter"}},
			{"chart", "Chart", "Plots a CSV column.", []string{"Plot monthly sales"}},
		},
		extraKW: []string{"python", "pandas", "postgres", "csv"}},
	{slug: "support", weight: 5, title: []string{"Support Desk", "Helpdesk", "Concierge", "FAQ Bot"},
		tags: []string{"customer-support", "helpdesk", "chat"},
		does: []string{"answers customer questions from your help center", "triages support tickets and drafts replies", "handles order status and refund questions", "escalates angry customers to a human"},
		skills: []skillWords{
			{"answer", "Answer", "Answers from the knowledge base.", []string{"How do I reset my password?"}},
		},
		extraKW: []string{"ticket", "refund", "email", "chat"}},
	{slug: "devops", weight: 4, title: []string{"Ops Agent", "Cluster Doctor", "Deploy Bot", "On-call Helper"},
		tags: []string{"devops", "kubernetes", "cloud", "monitoring"},
		does: []string{"diagnoses failing Kubernetes pods and suggests fixes", "writes Terraform and reviews infrastructure changes", "summarizes alerts and incidents for the on-call engineer", "explains cloud bills and finds idle resources"},
		skills: []skillWords{
			{"diagnose", "Diagnose", "Reads logs and events and names the likely cause.", []string{"Why is my pod in CrashLoopBackOff?"}},
		},
		extraKW: []string{"kubernetes", "docker", "terraform", "aws", "logs"}},
	{slug: "legal", weight: 3, title: []string{"Legal Assistant", "Contract Reader", "Clause Checker"},
		tags: []string{"legal", "contracts", "compliance"},
		does: []string{"reads a contract and flags unusual clauses", "explains terms of service in plain language", "checks documents against privacy compliance rules", "drafts simple contract templates for review by a lawyer"},
		skills: []skillWords{
			{"review-contract", "Contract review", "Flags risky clauses in a contract.", []string{"Is this NDA one-sided?"}},
		},
		extraKW: []string{"contract", "gdpr", "privacy", "clause"}},
	{slug: "health", weight: 3, title: []string{"Health Coach", "Nutrition Guide", "Fitness Planner"},
		tags: []string{"health", "fitness", "nutrition"},
		does: []string{"builds weekly workout plans for your goals", "counts calories and suggests balanced meals", "tracks sleep and habits and gives gentle nudges", "explains lab results in general terms, not medical advice"},
		skills: []skillWords{
			{"plan", "Workout plan", "A weekly training plan.", []string{"Beginner running plan for 5k"}},
		},
		extraKW: []string{"recipe", "sleep", "running", "yoga"}},
	{slug: "cooking", weight: 3, title: []string{"Chef", "Recipe Finder", "Meal Planner"},
		tags: []string{"cooking", "recipes", "food"},
		does: []string{"finds a recipe for what is left in your fridge", "plans a week of meals with a shopping list", "adapts recipes to vegan or gluten free diets", "scales recipe quantities and converts units"},
		skills: []skillWords{
			{"recipe", "Recipe", "A recipe from ingredients.", []string{"Dinner with rice, eggs and spinach"}},
		},
		extraKW: []string{"recipe", "vegan", "baking", "spices"}},
	{slug: "music", weight: 2, title: []string{"DJ", "Playlist Maker", "Chord Helper"},
		tags: []string{"music", "playlists", "entertainment"},
		does: []string{"makes playlists for a mood or an activity", "transcribes chords and suggests progressions", "recommends albums similar to the ones you love"},
		skills: []skillWords{
			{"playlist", "Playlist", "A playlist for a mood.", []string{"Focus music without lyrics"}},
		},
		extraKW: []string{"guitar", "piano", "jazz"}},
	{slug: "astro", weight: 1, title: []string{"Stargazer", "Sky Guide", "Orbit Tracker"},
		tags: []string{"astronomy", "space", "science"},
		does: []string{"tells you which planets are visible tonight", "tracks satellites and the space station overhead", "explains astronomy news and telescope settings"},
		skills: []skillWords{
			{"sky-tonight", "Sky tonight", "What to look at tonight.", []string{"Can I see Saturn from Oslo tonight?"}},
		},
		extraKW: []string{"telescope", "planets", "moon", "weather"}},
}

// Words shared by every domain: adjectives for names and display names,
// and generic sentences (some mention "assistant", so that term is broad).
var (
	adjectives = []string{"swift", "clever", "quiet", "bright", "steady", "open", "tiny", "nimble", "polite", "sharp", "friendly", "precise", "local", "global", "green", "lucky"}
	generic    = []string{
		"Works as a general assistant for this task and answers in your language.",
		"Runs on a community node and is free to use within fair limits.",
		"Responds in under a second for most requests.",
		"Keeps no conversation history beyond the current chat.",
		"Built with an open-source model and a small tool set.",
		"A friendly assistant that asks clarifying questions when a request is ambiguous.",
		"Maintained by volunteers; feedback is welcome.",
		"Available through MCP and the A2A agent card.",
	}
	domainTotal = func() int {
		n := 0
		for _, d := range domains {
			n += d.weight
		}
		return n
	}()
)

// pickDomain draws a domain by weight.
func pickDomain(r *rand.Rand) *domain {
	n := r.IntN(domainTotal)
	for i := range domains {
		if n < domains[i].weight {
			return &domains[i]
		}
		n -= domains[i].weight
	}
	return &domains[len(domains)-1]
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// newRecord builds listing number i, unsealed, from r: the seeding is
// deterministic for a given i. The publisher fields are filled by Seal.
func newRecord(r *rand.Rand, i int, now time.Time) *agent.Record {
	d := pickDomain(r)
	adj := pick(r, adjectives)
	name := fmt.Sprintf("%s-%s-%d", d.slug, adj, i)

	var desc strings.Builder
	fmt.Fprintf(&desc, "A %s agent that %s.", adj, pick(r, d.does))
	if r.IntN(2) == 0 {
		fmt.Fprintf(&desc, " It also %s.", pick(r, d.does))
	}
	fmt.Fprintf(&desc, " Good with %s and %s.", pick(r, d.extraKW), pick(r, d.extraKW))
	if r.IntN(5) == 0 { // a fifth of the agents span two domains
		o := pickDomain(r)
		fmt.Fprintf(&desc, " Can also help with %s: it %s.", o.tags[0], pick(r, o.does))
	}
	for k := r.IntN(3); k > 0; k-- {
		desc.WriteString(" " + pick(r, generic))
	}

	tags := []string{d.tags[0]}
	seen := map[string]bool{d.tags[0]: true}
	for k := 1 + r.IntN(4); k > 0; k-- {
		t := pick(r, d.tags)
		if !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}

	var skills []agent.Skill
	for _, s := range d.skills {
		if len(skills) == 0 || r.IntN(2) == 0 {
			skills = append(skills, agent.Skill{ID: s.id, Name: s.name, Description: s.desc, Examples: s.examples})
		}
	}

	issued := now.Add(-time.Duration(r.IntN(600)) * time.Second)
	return &agent.Record{
		Name:        name,
		DisplayName: fmt.Sprintf("%s %s", strings.ToUpper(adj[:1])+adj[1:], pick(r, d.title)),
		Description: desc.String(),
		Tags:        tags,
		Skills:      skills,
		Version:     fmt.Sprintf("1.%d.%d", r.IntN(10), r.IntN(20)),
		Seq:         1,
		IssuedAt:    issued,
		ExpiresAt:   issued.Add(24 * time.Hour),
	}
}
