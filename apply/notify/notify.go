// Package notify tells an operator what a migration or a replica does, by
// POSTing one JSON object per event to webhook URLs (PGRELAY_WEBHOOK_URL).
//
// Delivery runs off the replication path: Emit puts the event in a bounded
// queue per URL and returns at once; when a queue is full its oldest event is
// dropped, counted (Stats) and logged. A goroutine per URL delivers in order
// through go-retryablehttp: retries with backoff and jitter on connection
// errors, 5xx and 429 (honouring Retry-After), a bounded timeout per attempt,
// an Idempotency-Key per event, an HMAC-SHA256 signature when a secret is set,
// TLS verified. The body schema and the signature are documented in
// docs/operations-webhooks.md.
//
// A nil *Notifier (New without URLs) is a working no-op, so callers need no
// checks.
package notify

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgrelay/pgrelay/internal/redact"
)

// Format is the body format: FormatJSON (the documented object) or
// FormatSlack ({"text": ...}, for a Slack incoming webhook).
type Format string

const (
	FormatJSON  Format = "json"
	FormatSlack Format = "slack"
)

// Defaults applied by New to zero fields.
const (
	DefaultRepeat         = 10 * time.Minute
	DefaultQueueSize      = 1000
	DefaultRequestTimeout = 10 * time.Second
	DefaultRetryMax       = 8
	DefaultRetryWaitMin   = time.Second
	DefaultRetryWaitMax   = time.Minute
	DefaultRetryAfterMax  = 5 * time.Minute
	// CloseTimeout is how long a command should let Close deliver what is
	// queued (migrate's final event) before it exits.
	CloseTimeout = 15 * time.Second
)

// Config says where events go and when the watched conditions send one.
type Config struct {
	// URLs each get every event (PGRELAY_WEBHOOK_URL, comma-separated).
	URLs []string
	// Secret signs each body (PGRELAY_WEBHOOK_SECRET); empty = unsigned.
	Secret string
	// Format of the body (PGRELAY_WEBHOOK_FORMAT); empty = json.
	Format Format

	// Slot, SourceURL and TargetURL fill the envelope of every event. Of the
	// URLs only host:port/database is sent (Endpoint), and their passwords are
	// scrubbed from every text field.
	Slot      string
	SourceURL string
	TargetURL string
	// Secrets are more strings never to send or log (e.g. passwords from a
	// password file).
	Secrets []string
	// Redact, when set, also hides secrets in every text field of a body
	// (cmd/pgrelay's redaction of everything it prints).
	Redact func(string) string

	// Repeat is how often retrying and slot.at_risk are sent again while the
	// condition lasts (PGRELAY_WEBHOOK_REPEAT).
	Repeat time.Duration
	// LagAlert sends lag.high past it (PGRELAY_LAG_ALERT); zero = off.
	LagAlert LagAlert
	// PreparedAlert sends prepared.waiting for a prepared transaction held on
	// the target that long (PGRELAY_PREPARED_ALERT); 0 = off.
	PreparedAlert time.Duration

	// Delivery tuning; zero = the Default* constants.
	QueueSize      int           // events waiting per URL
	RequestTimeout time.Duration // one attempt, connect to response
	RetryMax       int           // retries after the first attempt
	RetryWaitMin   time.Duration // backoff bounds (exponential, full jitter)
	RetryWaitMax   time.Duration
	RetryAfterMax  time.Duration // longest Retry-After honoured
	// RootCAs verifies the receivers' certificates; nil = the system's roots
	// (SSL_CERT_FILE / SSL_CERT_DIR apply).
	RootCAs *x509.CertPool
	// Now is the clock of the watchers and the event times; nil = time.Now.
	Now func() time.Time
}

// Stats are the notifier's counters, for /metrics. Deliveries count once per
// event per URL.
type Stats struct {
	Emitted   uint64 // events passed to Emit (and sent by the watchers)
	Delivered uint64 // deliveries a receiver accepted (2xx)
	Failed    uint64 // deliveries given up: retries exhausted, refused (4xx), TLS, or cut off by Close
	Dropped   uint64 // deliveries dropped from a full queue, oldest first
	Retries   uint64 // attempts after the first
	Queued    int    // deliveries waiting now
}

// Notifier sends events to the configured webhooks.
type Notifier struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	env     envelope // slot, source, target
	secrets []string
	targets []*target
	client  *http.Client

	// ctx ends in-flight deliveries when Close gives up waiting.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	emitted, delivered, failed, dropped, retries atomic.Uint64

	mu    sync.Mutex // guards watch
	watch watch
}

// New starts a notifier for cfg. Without URLs it returns nil, a no-op
// Notifier. log gets delivery failures and drops; nil discards them.
func New(cfg Config, log *slog.Logger) (*Notifier, error) {
	if len(cfg.URLs) == 0 {
		return nil, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch cfg.Format {
	case "":
		cfg.Format = FormatJSON
	case FormatJSON, FormatSlack:
	default:
		return nil, fmt.Errorf("notify: format %q: expected json or slack", cfg.Format)
	}
	setDefault(&cfg.Repeat, DefaultRepeat)
	setDefault(&cfg.QueueSize, DefaultQueueSize)
	setDefault(&cfg.RequestTimeout, DefaultRequestTimeout)
	setDefault(&cfg.RetryMax, DefaultRetryMax)
	setDefault(&cfg.RetryWaitMin, DefaultRetryWaitMin)
	setDefault(&cfg.RetryWaitMax, DefaultRetryWaitMax)
	setDefault(&cfg.RetryAfterMax, DefaultRetryAfterMax)
	if cfg.RetryWaitMax < cfg.RetryWaitMin {
		cfg.RetryWaitMax = cfg.RetryWaitMin
	}
	n := &Notifier{cfg: cfg, log: log, now: cfg.Now}
	if n.now == nil {
		n.now = time.Now
	}
	n.secrets = append(n.secrets, cfg.Secrets...)
	n.secrets = append(n.secrets, cfg.Secret, passwordOf(cfg.SourceURL), passwordOf(cfg.TargetURL))
	for i, raw := range cfg.URLs {
		t, err := newTarget(i+1, len(cfg.URLs), strings.TrimSpace(raw))
		if err != nil {
			return nil, err
		}
		n.secrets = append(n.secrets, strings.TrimSpace(raw)) // replaced whole, wherever it appears
		n.secrets = append(n.secrets, URLSecrets(raw)...)
		n.targets = append(n.targets, t)
	}
	// The longest first: a secret that contains another is replaced whole.
	slices.SortFunc(n.secrets, func(a, b string) int { return len(b) - len(a) })
	// A password pasted into a URL unescaped may be read as a host or a
	// database: the endpoints are read from the URLs with their secrets
	// masked the way every reading of them sees, and scrubbed again.
	n.env = envelope{slot: cfg.Slot, source: n.scrub(Endpoint(redact.ConnString(cfg.SourceURL))),
		target: n.scrub(Endpoint(redact.ConnString(cfg.TargetURL)))}
	n.client = newHTTPClient(cfg)
	// The deliveries outlive the run's context on purpose: the final event of
	// a run that was signalled to stop must still go out. Close bounds them.
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, t := range n.targets {
		t.client = n.retryClient(t)
		n.wg.Add(1)
		go n.run(t)
	}
	return n, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Emit queues ev for every URL and returns at once. When a URL's queue is
// full, its oldest event is dropped to make room. After Close it does nothing.
func (n *Notifier) Emit(ev Event) {
	if n == nil || n.closed.Load() {
		return
	}
	env := n.env
	env.id = newID()
	env.time = n.now()
	body, err := ev.body(n.cfg.Format, env, n.scrub)
	if err != nil { // the fields are plain values: cannot happen
		n.log.Error("webhook: cannot encode event", "event", string(ev.Type), "error", err)
		return
	}
	n.emitted.Add(1)
	p := &payload{id: env.id, typ: ev.Type, body: body}
	for _, t := range n.targets {
		if old := t.push(p, n.cfg.QueueSize); old != nil {
			total := n.dropped.Add(1)
			n.log.Warn("webhook queue full: dropped the oldest event", "webhook", t.shown,
				"event", string(old.typ), "id", old.id, "dropped_total", total)
		}
	}
}

// Close stops taking events and waits until the queued ones are delivered
// (or given up), or until ctx ends: then deliveries in flight are cut off,
// what is left is counted as failed, and the error says how many.
func (n *Notifier) Close(ctx context.Context) error {
	if n == nil || n.closed.Swap(true) {
		return nil
	}
	for _, t := range n.targets {
		t.close()
	}
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
		left := 0
		for _, t := range n.targets {
			left += t.drop()
		}
		n.failed.Add(uint64(left))
		if left > 0 {
			err = fmt.Errorf("notify: %d webhook deliveries were still queued when pgrelay stopped waiting", left)
			n.log.Warn("webhook: events not delivered before exit", "undelivered", left)
		}
	}
	n.cancel()
	n.client.CloseIdleConnections()
	return err
}

// Stats returns the counters; the zero Stats for a nil Notifier.
func (n *Notifier) Stats() Stats {
	if n == nil {
		return Stats{}
	}
	queued := 0
	for _, t := range n.targets {
		queued += t.len()
	}
	return Stats{
		Emitted:   n.emitted.Load(),
		Delivered: n.delivered.Load(),
		Failed:    n.failed.Load(),
		Dropped:   n.dropped.Load(),
		Retries:   n.retries.Load(),
		Queued:    queued,
	}
}

// scrub removes every secret from a text field.
func (n *Notifier) scrub(s string) string {
	s = scrubSecrets(s, n.secrets)
	if n.cfg.Redact != nil {
		s = n.cfg.Redact(s)
	}
	return s
}

// payload is one encoded event, shared by the queues of all URLs.
type payload struct {
	id   string
	typ  Type
	body []byte
}

// target is one webhook URL: its queue and its delivery goroutine's client.
type target struct {
	url     string   // whole, with its credentials: never logged
	shown   string   // what logs say instead
	secrets []string // the parts of url that are credentials
	client  retryDoer

	mu      sync.Mutex
	queue   []*payload
	closing bool
	wake    chan struct{} // a push or close happened

	signing  []byte // the body in flight, re-signed for each retry
	attempts int    // attempts made for it so far
}

// push appends p, dropping and returning the oldest payload when the queue
// already holds max.
func (t *target) push(p *payload, max int) (dropped *payload) {
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		return nil
	}
	if len(t.queue) >= max {
		dropped = t.queue[0]
		t.queue[0] = nil
		t.queue = t.queue[1:]
	}
	t.queue = append(t.queue, p)
	t.mu.Unlock()
	t.signal()
	return dropped
}

func (t *target) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// next waits for the next payload; false once the queue is closed and empty,
// or ctx ended.
func (t *target) next(ctx context.Context) (*payload, bool) {
	for {
		if ctx.Err() != nil {
			return nil, false
		}
		t.mu.Lock()
		if len(t.queue) > 0 {
			p := t.queue[0]
			t.queue[0] = nil
			t.queue = t.queue[1:]
			t.mu.Unlock()
			return p, true
		}
		closing := t.closing
		t.mu.Unlock()
		if closing {
			return nil, false
		}
		select {
		case <-t.wake:
		case <-ctx.Done():
		}
	}
}

func (t *target) close() {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	t.signal()
}

// drop empties the queue, returning how many payloads it held.
func (t *target) drop() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.queue)
	t.queue = nil
	return n
}

func (t *target) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue)
}

// run delivers t's payloads in order until Close.
func (n *Notifier) run(t *target) {
	defer n.wg.Done()
	for {
		p, ok := t.next(n.ctx)
		if !ok {
			return
		}
		n.deliver(t, p)
	}
}

// newTarget checks one webhook URL (number i of count) and works out how
// logs show it: scheme and host only, the credentials a URL may carry
// (user:pass@, a token in the path or query, as Slack's) left out.
func newTarget(i, count int, raw string) (*target, error) {
	if err := CheckURL(raw); err != nil {
		return nil, fmt.Errorf("notify: webhook URL %d (%s): %w", i, RedactURL(raw), err)
	}
	u, _ := url.Parse(raw)
	t := &target{url: raw, wake: make(chan struct{}, 1), shown: RedactURL(raw)}
	if count > 1 {
		t.shown = fmt.Sprintf("#%d %s", i, t.shown)
	}
	t.secrets = append(t.secrets, raw)
	if p, ok := u.User.Password(); ok {
		t.secrets = append(t.secrets, p)
	} else if u.User != nil { // a token as the user name
		t.secrets = append(t.secrets, u.User.Username())
	}
	if u.EscapedPath() != "" && u.EscapedPath() != "/" {
		t.secrets = append(t.secrets, u.EscapedPath(), u.Path)
	}
	if u.RawQuery != "" {
		t.secrets = append(t.secrets, u.RawQuery)
	}
	return t, nil
}

// CheckURL checks that raw is a webhook URL: http or https, with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("expected an http:// or https:// URL with a host")
	}
	return nil
}

// URLSecrets are the parts of a webhook URL that may be credentials, for a
// log's redaction: its password (or a user name without one, a token), the
// values of its query, and the path segments long enough to be a token (a
// Slack, Discord or Teams URL ends in one). Not the URL whole, its host or
// its short segments such as /hooks: a redaction that hides every piece of
// a secret (cmd/pgrelay's) would garble every message naming a host, a port
// or a word of the path. A URL that does not parse is taken apart as its
// shape allows (unparsableSecrets).
func URLSecrets(raw string) []string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return unparsableSecrets(raw)
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	} else if u.User != nil {
		out = append(out, u.User.Username())
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= minTokenLen {
			out = append(out, seg)
		}
	}
	return out
}

// unparsableSecrets are the parts of a URL url.Parse refused (a bad port or
// host, a bad escape, a password pasted with its '/', '?' or '#') that may be
// credentials: everything before the last '@' after the scheme (whatever of
// a password the parsers may split), the query's values and the token-long
// path segments, as URLSecrets takes them. Not the URL whole: its scheme
// and the words of the error quoting it (http, ://) would be hidden too,
// and the message saying what a webhook URL must be read "expected an xxxxx
// or xxxxxs:// URL".
func unparsableSecrets(raw string) []string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || strings.ContainsAny(scheme, "@/?#") {
		return []string{raw}
	}
	var out []string
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		out = append(out, rest[:i])
		rest = rest[i+1:]
	}
	rest, fragment, _ := strings.Cut(rest, "#")
	if fragment != "" {
		out = append(out, fragment)
	}
	rest, query, _ := strings.Cut(rest, "?")
	for _, kv := range strings.Split(query, "&") {
		if _, v, ok := strings.Cut(kv, "="); ok && v != "" {
			out = append(out, v)
		} else if !ok && kv != "" {
			out = append(out, kv)
		}
	}
	for _, seg := range strings.Split(rest, "/") {
		if len(seg) >= minTokenLen {
			out = append(out, seg)
		}
	}
	return out
}

// minTokenLen is the shortest path segment URLSecrets takes for a token.
const minTokenLen = 16

// RedactURL is how a webhook URL appears in logs and errors: its scheme and
// host, with "/…" when a path or query (which may hold a token) was left out.
// It never returns user information.
func RedactURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	s := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		s += "/…"
	}
	return s
}

// newID returns a random UUID (version 4): the event's id and Idempotency-Key.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// minSecretLen: shorter strings are not replaced, which would garble every
// message and tell the secret anyway (as cmd/pgrelay's redaction).
const minSecretLen = 4

// redacted replaces a secret.
const redacted = "xxxxx"

// scrubSecrets replaces every occurrence of each secret (and its URL-escaped
// form) in text.
func scrubSecrets(text string, secrets []string) string {
	for _, s := range secrets {
		if len(s) < minSecretLen {
			continue
		}
		text = strings.ReplaceAll(text, s, redacted)
		if e := url.QueryEscape(s); e != s {
			text = strings.ReplaceAll(text, e, redacted)
		}
	}
	return text
}

// errClosed is what a delivery cut off by Close reports.
var errClosed = errors.New("pgrelay stopped waiting for the receiver")
