package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// A share link is /share/{token}: 32 random bytes, base64url without
// padding. Only the token's sha256 is stored, so the link is shown once,
// when it is made.
const shareTokenLen = 43

// ErrNoShare is a share link that was revoked or never existed.
var ErrNoShare = agent.NewError(agent.KindNotFound, agent.CodeUnknownConv,
	"This share link was revoked or never existed. Ask whoever sent it for a new one.")

// Share gives owner's conversation id with agentID a new read-only share
// link and returns its token; an earlier link of it stops working.
// Someone else's conversation looks exactly like a missing one.
func (c *Chat) Share(ctx context.Context, owner Owner, agentID, id string) (string, error) {
	conv, err := c.Conversation(ctx, owner, agentID, id)
	if err != nil {
		return "", err
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	token := base64.RawURLEncoding.EncodeToString(b[:])
	h := sha256.Sum256([]byte(token))
	if err := c.Store.ShareConversation(ctx, conv.ID, h[:], c.now()); err != nil {
		return "", fmt.Errorf("share conversation: %w", err)
	}
	return token, nil
}

// Unshare revokes the share link of owner's conversation id with agentID.
func (c *Chat) Unshare(ctx context.Context, owner Owner, agentID, id string) error {
	conv, err := c.Conversation(ctx, owner, agentID, id)
	if err != nil {
		return err
	}
	if err := c.Store.UnshareConversation(ctx, conv.ID); err != nil {
		return fmt.Errorf("unshare conversation: %w", err)
	}
	return nil
}

// IsShared reports whether conversation id has a share link (the caller
// has already checked that it is the viewer's).
func (c *Chat) IsShared(ctx context.Context, id string) (bool, error) {
	ok, err := c.Store.ConversationShared(ctx, id)
	if err != nil {
		return false, fmt.Errorf("conversation shared: %w", err)
	}
	return ok, nil
}

// Shared is the conversation a share link's token opens, for anyone:
// ErrNoShare if the link was revoked or never existed.
func (c *Chat) Shared(ctx context.Context, token string) (store.Conversation, error) {
	if len(token) != shareTokenLen {
		return store.Conversation{}, ErrNoShare
	}
	h := sha256.Sum256([]byte(token))
	conv, err := c.Store.SharedConversation(ctx, h[:])
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Conversation{}, ErrNoShare
	case err != nil:
		return store.Conversation{}, fmt.Errorf("shared conversation: %w", err)
	}
	return conv, nil
}
