package stream

import (
	"errors"
	"fmt"
	"io"

	"github.com/gorilla/websocket"
)

// closedError is the cause of a stream the bot ended: a close frame, its
// connection closed, AudioSocket's hangup.
type closedError struct{ what string }

func (e *closedError) Error() string { return e.what }

// readCause says why reading from the bot failed.
func readCause(err error) error {
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return &closedError{what: fmt.Sprintf("the bot closed the stream (%d %s)", ce.Code, clip(ce.Text))}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &closedError{what: "the bot's connection closed"}
	case errors.Is(err, websocket.ErrReadLimit):
		return errors.New("a message from the bot exceeds the size limit")
	}
	return fmt.Errorf("read from the bot: %s", scrub(err))
}
