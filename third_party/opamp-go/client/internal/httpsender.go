package internal

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/open-telemetry/opamp-go/client/internal/utils"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/internal"
	"github.com/open-telemetry/opamp-go/protobufs"
)

const (
	OpAMPPlainHTTPMethod     = "POST"
	defaultPollingIntervalMs = 30 * 1000 // default interval is 30 seconds.
)

const (
	headerContentEncoding = "Content-Encoding"
	encodingTypeGZip      = "gzip"
)

type requestWrapper struct {
	*http.Request

	bodyReader func() io.ReadCloser
}

func bodyReader(buf []byte) func() io.ReadCloser {
	return func() io.ReadCloser {
		return io.NopCloser(bytes.NewReader(buf))
	}
}

func (r *requestWrapper) rewind(ctx context.Context) {
	r.Body = r.bodyReader()
	r.Request = r.Request.WithContext(ctx)
}

// HTTPSender allows scheduling messages to send. Once run, it will loop through
// a request/response cycle for each message to send and will process all received
// responses using a receivedProcessor. If there are no pending messages to send
// the HTTPSender will wait for the configured polling interval.
type HTTPSender struct {
	SenderCommon

	url                string
	logger             types.Logger
	client             *http.Client
	callbacks          types.Callbacks
	pollingIntervalMs  atomic.Int64
	compressionEnabled bool
	maxMessageBytes    int64 // 0: no limit [receiptd patch]

	// Headers to send with all requests.
	getHeader func() http.Header

	// Processor to handle received messages.
	receiveProcessor receivedProcessor
}

// NewHTTPSender creates a new Sender that uses HTTP to send messages
// with default settings.
func NewHTTPSender(logger types.Logger) *HTTPSender {
	h := &HTTPSender{
		SenderCommon: NewSenderCommon(),
		logger:       logger,
		client:       utils.NewHttpClient(),
	}
	h.pollingIntervalMs.Store(defaultPollingIntervalMs)
	// initialize the headers with no additional headers
	h.SetRequestHeader(nil, nil)
	return h
}

// SetHTTPClient makes client the one every request goes through.
// This method is not thread safe and must be called before h.client is used.
// [receiptd patch]
func (h *HTTPSender) SetHTTPClient(client *http.Client) { h.client = client }

// SetMaxMessageBytes bounds an answer's body; 0: no limit.
// This method is not thread safe and must be called before Run.
// [receiptd patch]
func (h *HTTPSender) SetMaxMessageBytes(n int64) { h.maxMessageBytes = n }

// SetProxy will force each request to use passed proxy and use the passed headers when making a CONNECT request to the proxy.
// If the proxy has no schema http is used.
// This method is not thread safe and must be called before h.client is used.
func (h *HTTPSender) SetProxy(proxy string, headers http.Header) error {
	proxyURL, err := url.Parse(proxy)
	if err != nil || proxyURL.Scheme == "" || proxyURL.Host == "" { // error or bad URL - try to use http as scheme to resolve
		proxyURL, err = url.Parse("http://" + proxy)
		if err != nil {
			return err
		}
	}
	if proxyURL.Hostname() == "" {
		return url.InvalidHostError(proxy)
	}

	proxyTransport := &http.Transport{}
	if h.client.Transport != nil {
		transport, ok := h.client.Transport.(*http.Transport)
		if !ok {
			return fmt.Errorf("unable to coorce client transport as *http.Transport detected type is: %T", h.client.Transport)
		}
		proxyTransport = transport.Clone()
	}
	proxyTransport.Proxy = http.ProxyURL(proxyURL)
	proxyTransport.ProxyConnectHeader = headers
	h.client.Transport = proxyTransport
	return nil
}

// Run starts the processing loop that will perform the HTTP request/response.
// When there are no more messages to send Run will suspend until either there is
// a new message to send or the polling interval elapses.
// Should not be called concurrently with itself. Can be called concurrently with
// modifying NextMessage().
// Run continues until ctx is cancelled.
func (h *HTTPSender) Run(
	ctx context.Context,
	url string,
	callbacks types.Callbacks,
	clientSyncedState *ClientSyncedState,
	packagesStateProvider types.PackagesStateProvider,
	packageSyncMutex *sync.Mutex,
	reporterInterval time.Duration,
) {
	h.url = url
	h.callbacks = callbacks
	h.receiveProcessor = newReceivedProcessor(h.logger, callbacks, h, clientSyncedState, packagesStateProvider, packageSyncMutex, reporterInterval)

	// we need to detect if the redirect was ever set, if not, we want default behaviour
	if callbacks.CheckRedirect != nil {
		h.client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			// viaResp only non-nil for ws client
			return callbacks.CheckRedirect(req, via, nil)
		}
	}

	for {
		pollingTimer := time.NewTimer(time.Millisecond * time.Duration(h.pollingIntervalMs.Load()))
		select {
		case <-h.hasPendingMessage:
			// Have something to send. Stop the polling timer and send what we have.
			pollingTimer.Stop()
			h.makeOneRequestRoundtrip(ctx)

		case <-pollingTimer.C:
			// Polling interval has passed. Force a status update.
			h.NextMessage().Update(func(msg *protobufs.AgentToServer) {})
			// This will make hasPendingMessage channel readable, so we will enter
			// the case above on the next iteration of the loop.
			h.ScheduleSend()

		case <-ctx.Done():
			return
		}
	}
}

// SetRequestHeader sets additional HTTP headers to send with all future requests.
// Should not be called concurrently with any other method.
func (h *HTTPSender) SetRequestHeader(baseHeaders http.Header, headerFunc func(http.Header) http.Header) {
	if baseHeaders == nil {
		baseHeaders = http.Header{}
	}

	if headerFunc == nil {
		headerFunc = func(h http.Header) http.Header {
			return h
		}
	}

	h.getHeader = func() http.Header {
		requestHeader := headerFunc(baseHeaders.Clone())
		requestHeader.Set(headerContentType, contentTypeProtobuf)
		if h.compressionEnabled {
			requestHeader.Set(headerContentEncoding, encodingTypeGZip)
		}

		return requestHeader
	}
}

// makeOneRequestRoundtrip sends a request and receives a response.
// It will retry the request if the server responds with too many
// requests or unavailable status.
func (h *HTTPSender) makeOneRequestRoundtrip(ctx context.Context) {
	resp, err := h.sendRequestWithRetries(ctx)
	if err != nil {
		h.logger.Errorf(ctx, "%v", err)
		return
	}
	if resp == nil {
		// No request was sent and nothing to receive.
		return
	}
	h.receiveResponse(ctx, resp)
}

// requestResult represents the outcome of a single HTTP request attempt.
type requestResult struct {
	resp     *http.Response
	err      error
	retry    bool
	interval time.Duration
}

func (h *HTTPSender) sendRequestWithRetries(ctx context.Context) (*http.Response, error) {
	req, err := h.prepareRequest(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			h.logger.Debugf(ctx, "Client is stopped, will not try anymore.")
		} else {
			h.logger.Errorf(ctx, "Failed prepare request (%v), will not try anymore.", err)
		}
		return nil, err
	}
	if req == nil {
		// Nothing to send.
		return nil, nil
	}

	// Repeatedly try requests with a backoff strategy.
	infiniteBackoff := backoff.NewExponentialBackOff()
	// Make backoff run forever.
	infiniteBackoff.MaxElapsedTime = 0

	interval := time.Duration(0)

	for {
		timer := time.NewTimer(interval)
		interval = infiniteBackoff.NextBackOff()

		select {
		case <-timer.C:
			result := h.attemptRequest(ctx, req, interval)

			if !result.retry {
				return result.resp, result.err
			}

			// Update interval if retry was requested with a specific interval.
			if result.interval > 0 {
				interval = result.interval
			}

			// Log and notify about the retryable failure.
			h.logger.Errorf(ctx, "Failed to do HTTP request (%v), will retry", result.err)
			h.callbacks.OnConnectFailed(ctx, result.err)

		case <-ctx.Done():
			h.logger.Debugf(ctx, "Client is stopped, will not try anymore.")
			return nil, ctx.Err()
		}
	}
}

// attemptRequest performs a single HTTP request attempt and returns a result indicating
// whether to retry or return.
func (h *HTTPSender) attemptRequest(ctx context.Context, req *requestWrapper, currentInterval time.Duration) requestResult {
	req.rewind(ctx)

	resp, err := h.client.Do(req.Request)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			h.logger.Debugf(ctx, "Client is stopped, will not try anymore.")
			return requestResult{resp: nil, err: err, retry: false}
		}
		// other errors are retryable.
		return requestResult{resp: nil, err: err, retry: true}
	}

	// Handle HTTP response status codes.
	switch resp.StatusCode {
	case http.StatusOK:
		h.callbacks.OnConnect(ctx)
		return requestResult{resp: resp, err: nil, retry: false}

	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		retryInterval := recalculateInterval(currentInterval, resp)
		_, _ = io.Copy(io.Discard, resp.Body) // to allow connection reuse.
		_ = resp.Body.Close()
		return requestResult{
			resp:     nil,
			err:      fmt.Errorf("server response code=%d", resp.StatusCode),
			retry:    true,
			interval: retryInterval,
		}

	default:
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return requestResult{
			resp:  nil,
			err:   fmt.Errorf("invalid response from server: %d", resp.StatusCode),
			retry: false,
		}
	}
}

func recalculateInterval(interval time.Duration, resp *http.Response) time.Duration {
	retryAfter := internal.ExtractRetryAfterHeader(resp)
	if retryAfter.Defined && retryAfter.Duration > interval {
		// If the Server suggested connecting later than our interval
		// then honour Server's request, otherwise wait at least
		// as much as we calculated.
		interval = retryAfter.Duration
	}
	return interval
}

func (h *HTTPSender) prepareRequest(ctx context.Context) (*requestWrapper, error) {
	msgToSend := h.nextMessage.PopPending()
	if msgToSend == nil || proto.Equal(msgToSend, &protobufs.AgentToServer{}) {
		// There is no pending message or the message is empty.
		// Nothing to send.
		return nil, nil
	}

	data, err := proto.Marshal(msgToSend)
	if err != nil {
		return nil, err
	}

	r, err := http.NewRequestWithContext(ctx, OpAMPPlainHTTPMethod, h.url, nil)
	if err != nil {
		return nil, err
	}
	req := requestWrapper{Request: r}

	if h.compressionEnabled {
		var buf bytes.Buffer
		g := gzip.NewWriter(&buf)
		if _, err = g.Write(data); err != nil {
			h.logger.Errorf(ctx, "Failed to compress message: %v", err)
			return nil, err
		}
		if err = g.Close(); err != nil {
			h.logger.Errorf(ctx, "Failed to close the writer: %v", err)
			return nil, err
		}
		req.bodyReader = bodyReader(buf.Bytes())
	} else {
		req.bodyReader = bodyReader(data)
	}

	req.Header = h.getHeader()

	if msgToSend.InstanceUid != nil {
		uid, err := uuid.FromBytes(msgToSend.InstanceUid)
		if err != nil {
			return nil, err
		}
		req.Header.Set(headerOpAMPInstanceUID, uid.String())
	}

	return &req, nil
}

func (h *HTTPSender) receiveResponse(ctx context.Context, resp *http.Response) {
	body := io.Reader(resp.Body)
	if limit := h.maxMessageBytes; limit > 0 {
		// [receiptd patch] Refuse an answer over the limit before reading
		// it whole: by its length when the Server says it, else once one
		// byte more than the limit has been read. Closing the body unread
		// closes the connection.
		if resp.ContentLength > limit {
			_ = resp.Body.Close()
			h.logger.Errorf(ctx, "%v", &types.MessageTooLargeError{Limit: limit})
			h.callbacks.OnConnectFailed(ctx, &types.MessageTooLargeError{Limit: limit})
			return
		}
		body = io.LimitReader(resp.Body, limit+1)
	}
	msgBytes, err := io.ReadAll(body)
	if err == nil && h.maxMessageBytes > 0 && int64(len(msgBytes)) > h.maxMessageBytes {
		err = &types.MessageTooLargeError{Limit: h.maxMessageBytes}
		h.callbacks.OnConnectFailed(ctx, err)
	}
	if err != nil {
		_ = resp.Body.Close()
		h.logger.Errorf(ctx, "cannot read response body: %v", err)
		return
	}
	_ = resp.Body.Close()

	var response protobufs.ServerToAgent
	if err := proto.Unmarshal(msgBytes, &response); err != nil {
		h.logger.Errorf(ctx, "cannot unmarshal response: %v", err)
		return
	}

	h.receiveProcessor.ProcessReceivedMessage(ctx, &response)
}

func (h *HTTPSender) SetHeartbeatInterval(duration time.Duration) error {
	if duration <= 0 {
		return errors.New("heartbeat interval for httpclient must be greater than zero")
	}

	if duration != 0 {
		h.SetPollingInterval(duration)
	}

	return nil
}

// SetPollingInterval sets the interval between polling. Has effect starting from the
// next polling cycle.
func (h *HTTPSender) SetPollingInterval(duration time.Duration) {
	h.pollingIntervalMs.Store(duration.Milliseconds())
}

// EnableCompression enables compression for the sender.
// Should not be called concurrently with Run.
func (h *HTTPSender) EnableCompression() {
	h.compressionEnabled = true
}

func (h *HTTPSender) AddTLSConfig(config *tls.Config) {
	if config != nil {
		tlsTransport := &http.Transport{}
		if h.client.Transport != nil {
			if transport, ok := h.client.Transport.(*http.Transport); ok {
				tlsTransport = transport.Clone()
			}
		}
		tlsTransport.TLSClientConfig = config
		h.client.Transport = tlsTransport
	}
}
