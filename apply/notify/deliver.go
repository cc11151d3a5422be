package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
)

// The headers of every request (docs/operations-webhooks.md).
const (
	HeaderIdempotencyKey = "Idempotency-Key"     // the event's id, the same on every retry
	HeaderEvent          = "X-Pgrelay-Event"     // the event type
	HeaderTimestamp      = "X-Pgrelay-Timestamp" // Unix seconds of the attempt, signed with the body
	HeaderSignature      = "X-Pgrelay-Signature" // sha256=<hex HMAC-SHA256(secret, timestamp "." body)>
)

// retryDoer is the part of retryablehttp.Client a target uses.
type retryDoer interface {
	Do(*retryablehttp.Request) (*http.Response, error)
}

// newHTTPClient is the client every attempt goes through: pooled
// connections, certificates verified (against cfg.RootCAs when set), a bound
// on each attempt, and no redirects (a redirected POST would become a GET).
func newHTTPClient(cfg Config) *http.Client {
	tr := cleanhttp.DefaultPooledTransport()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs}
	return &http.Client{
		Transport: tr,
		Timeout:   cfg.RequestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// retryClient is t's go-retryablehttp client. It is used by t's goroutine
// alone, which lets PrepareRetry re-sign the body in flight.
func (n *Notifier) retryClient(t *target) *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:   n.client,
		Logger:       nil, // failures are logged once, redacted, by deliver
		RetryWaitMin: n.cfg.RetryWaitMin,
		RetryWaitMax: n.cfg.RetryWaitMax,
		RetryMax:     n.cfg.RetryMax,
		CheckRetry:   checkRetry,
		Backoff:      n.backoff,
		RequestLogHook: func(_ retryablehttp.Logger, _ *http.Request, attempt int) {
			t.attempts = attempt + 1
			if attempt > 0 {
				n.retries.Add(1)
			}
		},
		PrepareRetry: func(r *http.Request) error {
			// A fresh header map: the previous attempt's may still be read.
			r.Header = r.Header.Clone()
			n.sign(r.Header, t.signing)
			return nil
		},
		// Do's own error names the whole URL: deliver builds a redacted one.
		ErrorHandler: func(resp *http.Response, err error, _ int) (*http.Response, error) {
			if resp != nil {
				drain(resp)
			}
			return nil, &attemptsError{status: statusOf(resp), err: err}
		},
	}
}

// checkRetry retries what may pass: connection errors and timeouts, 408,
// 429, and 5xx but 501 (go-retryablehttp's default policy, which gives up at
// once on certificate errors and bad URLs).
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if err == nil && resp != nil && resp.StatusCode == http.StatusRequestTimeout {
		return ctx.Err() == nil, ctx.Err()
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// backoff waits what a 429 or 503's Retry-After asks (up to RetryAfterMax),
// otherwise an exponential backoff with full jitter: a random wait between
// min and min·2^attempt, capped at max.
func (n *Notifier) backoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return min(max(d, lo), n.cfg.RetryAfterMax)
		}
	}
	ceil := hi
	if attempt < 30 && lo<<attempt < hi && lo<<attempt > 0 {
		ceil = lo << attempt
	}
	if ceil <= lo {
		return lo
	}
	return lo + rand.N(ceil-lo+1)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(24*time.Hour/time.Second) {
			s = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// deliver sends p to t, retrying as the client says, and counts and logs the
// outcome.
func (n *Notifier) deliver(t *target, p *payload) {
	err := n.post(t, p)
	if err == nil {
		n.delivered.Add(1)
		return
	}
	n.failed.Add(1)
	n.log.Warn("webhook delivery failed", "webhook", t.shown, "event", string(p.typ), "id", p.id,
		"attempts", t.attempts, "error", n.describe(t, err))
}

func (n *Notifier) post(t *target, p *payload) error {
	req, err := retryablehttp.NewRequestWithContext(n.ctx, http.MethodPost, t.url, p.body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pgrelay")
	req.Header.Set(HeaderIdempotencyKey, p.id)
	req.Header.Set(HeaderEvent, string(p.typ))
	t.signing, t.attempts = p.body, 0
	n.sign(req.Header, p.body)
	resp, err := t.client.Do(req)
	if err != nil {
		if n.ctx.Err() != nil {
			return errClosed
		}
		return err
	}
	drain(resp)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Not retried: 3xx (redirects are not followed) and 4xx but 408, 429.
		return &attemptsError{status: resp.Status}
	}
	return nil
}

// sign sets the timestamp and, with a secret, the signature headers.
func (n *Notifier) sign(h http.Header, body []byte) {
	ts := strconv.FormatInt(n.now().Unix(), 10)
	h.Set(HeaderTimestamp, ts)
	if n.cfg.Secret != "" {
		h.Set(HeaderSignature, Signature(n.cfg.Secret, ts, body))
	}
}

// Signature is the X-Pgrelay-Signature of a body sent at timestamp (the
// X-Pgrelay-Timestamp header): "sha256=" and the hex HMAC-SHA256, keyed with
// the secret, of the timestamp, a dot and the body.
func Signature(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify is the receiver's check of a request: the signature matches the
// body and timestamp, and the timestamp is within tolerance of now (a replay
// of an old request fails). A Go receiver may call it as it is.
func Verify(secret, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return false
	}
	return hmac.Equal([]byte(signature), []byte(Signature(secret, timestamp, body)))
}

// attemptsError is a delivery given up: the last status, or error.
type attemptsError struct {
	status string
	err    error
}

func (e *attemptsError) Error() string {
	switch {
	case e.err != nil:
		return e.err.Error()
	case e.status != "":
		return "receiver answered " + e.status
	}
	return "no answer"
}

func (e *attemptsError) Unwrap() error { return e.err }

// describe is err in one line without the URL's credentials: net/http's
// url.Error quotes the whole URL, which is left out, and every credential of
// it and every other secret is scrubbed.
func (n *Notifier) describe(t *target, err error) string {
	msg := bare(err)
	var ae *attemptsError
	if errors.As(err, &ae) {
		switch {
		case ae.err != nil && ae.status != "":
			msg = "receiver answered " + ae.status + " (" + bare(ae.err) + ")"
		case ae.err != nil:
			msg = bare(ae.err)
		case ae.status != "":
			msg = "receiver answered " + ae.status
		}
	}
	return oneLine(scrubSecrets(scrubSecrets(msg, t.secrets), n.secrets))
}

// bare is err's text without the url.Error wrapping that quotes the URL.
func bare(err error) string {
	var ue *url.Error
	for errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

func statusOf(resp *http.Response) string {
	if resp == nil {
		return ""
	}
	return resp.Status
}

// drain reads a little of the body so the connection can be reused, and
// closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
}
