package fake

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

var sqsService = &service{
	name:           "sqs",
	protocol:       awsJSON,
	target:         "AmazonSQS",
	jsonVersion:    "1.0",
	queryCompat:    true,
	throttleCode:   "ThrottlingException",
	throttleStatus: http.StatusBadRequest,
	json: map[string]func(*AWS, []byte) (any, error){
		"GetQueueUrl":    (*AWS).getQueueURL,
		"SendMessage":    (*AWS).sendMessage,
		"ReceiveMessage": (*AWS).receiveMessage,
		"DeleteMessage":  (*AWS).deleteMessage,
	},
}

// defaultVisibility is a queue's default visibility timeout, as SQS's.
const defaultVisibility = 30 * time.Second

type sqsState struct {
	queues []*queue
}

type queue struct {
	name, url string
	messages  []*message
}

type message struct {
	id, body string
	sent     time.Time
	// receipt is the handle of the last receive ("" before one);
	// invisibleUntil when the message is visible again.
	receipt        string
	invisibleUntil time.Time
	receives       int
	firstReceive   time.Time
}

// CreateQueue creates a queue (or finds the one of that name) and returns
// its URL.
func (f *AWS) CreateQueue(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.queueByName(name); q != nil {
		return q.url
	}
	q := &queue{name: name, url: f.srv.URL + "/" + AccountID + "/" + name}
	f.sqs.queues = append(f.sqs.queues, q)
	return q.url
}

// SendMessage puts a message in a queue, as an EventBridge rule would. It
// panics when there is no such queue.
func (f *AWS) SendMessage(queueURL, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queueByURL(queueURL)
	if q == nil {
		panic(fmt.Sprintf("fake SQS: no queue %s", queueURL))
	}
	f.enqueue(q, body)
}

// QueueMessages are the bodies still in a queue, in order (received but
// not deleted ones included).
func (f *AWS) QueueMessages(queueURL string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queueByURL(queueURL)
	if q == nil {
		return nil
	}
	out := make([]string, len(q.messages))
	for i, m := range q.messages {
		out[i] = m.body
	}
	return out
}

func (f *AWS) queueByName(name string) *queue {
	for _, q := range f.sqs.queues {
		if q.name == name {
			return q
		}
	}
	return nil
}

func (f *AWS) queueByURL(url string) *queue {
	for _, q := range f.sqs.queues {
		if q.url == url {
			return q
		}
	}
	return nil
}

func (f *AWS) enqueue(q *queue, body string) *message {
	n := f.nextID()
	m := &message{id: fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n), body: body, sent: f.clock.Now()}
	q.messages = append(q.messages, m)
	return m
}

func noQueue() error {
	e := badRequest("QueueDoesNotExist", "The specified queue does not exist.")
	e.queryCode = "AWS.SimpleQueueService.NonExistentQueue"
	return e
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

type getQueueURLInput struct{ QueueName string }

type getQueueURLOutput struct{ QueueUrl string }

func (f *AWS) getQueueURL(body []byte) (any, error) {
	var in getQueueURLInput
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	q := f.queueByName(in.QueueName)
	if q == nil {
		return nil, noQueue()
	}
	return getQueueURLOutput{QueueUrl: q.url}, nil
}

type sendMessageInput struct{ QueueUrl, MessageBody string }

type sendMessageOutput struct{ MessageId, MD5OfMessageBody string }

func (f *AWS) sendMessage(body []byte) (any, error) {
	var in sendMessageInput
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	q := f.queueByURL(in.QueueUrl)
	if q == nil {
		return nil, noQueue()
	}
	m := f.enqueue(q, in.MessageBody)
	return sendMessageOutput{MessageId: m.id, MD5OfMessageBody: md5Hex(m.body)}, nil
}

type receiveMessageInput struct {
	QueueUrl                    string
	MaxNumberOfMessages         *int
	VisibilityTimeout           *int
	WaitTimeSeconds             int
	AttributeNames              []string
	MessageSystemAttributeNames []string
}

type sqsMessage struct {
	MessageId     string
	ReceiptHandle string
	MD5OfBody     string
	Body          string
	Attributes    map[string]string `json:",omitempty"`
}

type receiveMessageOutput struct {
	Messages []sqsMessage `json:",omitempty"`
}

// receiveMessage answers up to MaxNumberOfMessages (default 1, at most 10)
// visible messages, making each invisible for the visibility timeout
// (default 30 s). It never waits: an empty queue answers at once, whatever
// WaitTimeSeconds says.
func (f *AWS) receiveMessage(body []byte) (any, error) {
	var in receiveMessageInput
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	q := f.queueByURL(in.QueueUrl)
	if q == nil {
		return nil, noQueue()
	}
	limit := 1
	if in.MaxNumberOfMessages != nil {
		limit = *in.MaxNumberOfMessages
	}
	if limit < 1 || limit > 10 {
		return nil, badRequest("InvalidParameterValue",
			"Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", limit)
	}
	visibility := defaultVisibility
	if in.VisibilityTimeout != nil {
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	attrs := append(in.AttributeNames, in.MessageSystemAttributeNames...)
	now := f.clock.Now()
	var out receiveMessageOutput
	for _, m := range q.messages {
		if len(out.Messages) == limit {
			break
		}
		if now.Before(m.invisibleUntil) {
			continue
		}
		m.receives++
		if m.receives == 1 {
			m.firstReceive = now
		}
		m.receipt = fmt.Sprintf("rh-%s-%d", m.id, m.receives)
		m.invisibleUntil = now.Add(visibility)
		out.Messages = append(out.Messages, sqsMessage{MessageId: m.id, ReceiptHandle: m.receipt,
			MD5OfBody: md5Hex(m.body), Body: m.body, Attributes: m.attributes(attrs)})
	}
	return out, nil
}

func (m *message) attributes(names []string) map[string]string {
	all := map[string]string{
		"SentTimestamp":                    strconv.FormatInt(m.sent.UnixMilli(), 10),
		"ApproximateReceiveCount":          strconv.Itoa(m.receives),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		"SenderId":                         AccountID,
	}
	out := map[string]string{}
	for _, n := range names {
		if n == "All" {
			return all
		}
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

type deleteMessageInput struct{ QueueUrl, ReceiptHandle string }

// deleteMessage deletes the message a receipt handle names (as SQS, a
// deleted message's handle deletes nothing and succeeds).
func (f *AWS) deleteMessage(body []byte) (any, error) {
	var in deleteMessageInput
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	q := f.queueByURL(in.QueueUrl)
	if q == nil {
		return nil, noQueue()
	}
	if !strings.HasPrefix(in.ReceiptHandle, "rh-") {
		e := badRequest("ReceiptHandleIsInvalid", "The input receipt handle %q is not a valid receipt handle.", in.ReceiptHandle)
		e.queryCode = "ReceiptHandleIsInvalid"
		return nil, e
	}
	for i, m := range q.messages {
		if m.receipt == in.ReceiptHandle {
			q.messages = append(q.messages[:i], q.messages[i+1:]...)
			break
		}
	}
	return struct{}{}, nil
}
