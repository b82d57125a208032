package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentsite/agentsite/store"
)

var _ store.PageWriter = batchTx{}

// UpsertRecords implements store.PageWriter: a page of listings in three
// statements (the rows, then their tags out and in) instead of three per
// listing. In a transaction SQLite opens a statement savepoint for each
// statement that writes through triggers, and the full-text index (FTS5)
// writes its pending terms out at every savepoint: one statement per
// listing made a segment of one listing each, and merged them (a quarter
// of a mirror's fill). Each row is written as UpsertRecord writes it (a
// stale seq changes nothing).
func (t batchTx) UpsertRecords(ctx context.Context, ls []store.Listing) ([]bool, error) {
	return t.b.db.upsertRecords(ctx, t.b, ls)
}

// maxPageRows bounds the rows of one statement (22 parameters each, below
// SQLite's limit of 32,766). It holds an import's chunk (BatchChunk, 500)
// and a mirror's page (256) whole: each statement after the rows' writes
// the full-text terms pending out as a segment (three, one per FTS5
// table), and fewer, larger segments are less to merge.
const maxPageRows = 1024

// pageTags is a row's tags, for insertPageTagsSQL.
type pageTags struct {
	Pos  int64           `json:"p"`
	Tags json.RawMessage `json:"t"`
}

const (
	deletePageTagsSQL = `-- name: delete_page_tags
DELETE FROM agent_tags WHERE agent_pos IN (SELECT value FROM json_each(?))`
	insertPageTagsSQL = `-- name: insert_page_tags
INSERT OR IGNORE INTO agent_tags (tag, agent_pos)
SELECT t.value, p.value ->> 'p' FROM json_each(?) AS p, json_each(p.value, '$.t') AS t`
)

// upsertPageSQL is upsertAgentSQL for n rows, returning the id of each
// row written.
func upsertPageSQL(n int) string {
	head, tail, _ := strings.Cut(upsertAgentSQL, "VALUES (")
	row, tail, _ := strings.Cut(tail, ")\n")
	head = strings.Replace(head, "-- name: upsert_record\n", "-- name: upsert_records\n", 1)
	tail = strings.Replace(tail, "RETURNING pos", "RETURNING id, pos", 1)
	var b strings.Builder
	b.Grow(len(head) + n*(len(row)+4) + len(tail))
	b.WriteString(head)
	b.WriteString("VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		b.WriteString(row)
		b.WriteString(")")
	}
	b.WriteString("\n")
	b.WriteString(tail)
	return b.String()
}

func (db *DB) upsertRecords(ctx context.Context, w writer, ls []store.Listing) ([]bool, error) {
	changed := make([]bool, len(ls))
	for from := 0; from < len(ls); from += maxPageRows {
		to := min(from+maxPageRows, len(ls))
		if err := db.upsertPage(ctx, w, ls[from:to], changed[from:to]); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// upsertPage writes ls (distinct ids), setting changed[i] when ls[i] was
// written (not stale).
func (db *DB) upsertPage(ctx context.Context, w writer, ls []store.Listing, changed []bool) error {
	index := make(map[string]int, len(ls))
	args := make([]any, 0, 22*len(ls))
	tags := make([]any, len(ls))
	for i, l := range ls {
		if _, dup := index[l.Record.ID]; dup {
			return fmt.Errorf("sqlite: upsert records: agent %s twice in one page", l.Record.ID)
		}
		index[l.Record.ID] = i
		a, t, err := upsertArgs(l)
		if err != nil {
			return err
		}
		args, tags[i] = append(args, a...), t
	}
	return w.atomic(ctx, func(ctx context.Context, tx execer) error {
		rows, err := tx.QueryContext(ctx, upsertPageSQL(len(ls)), args...)
		if err != nil {
			return dbErr("upsert agents", err)
		}
		var written []int64
		var withTags []pageTags
		for rows.Next() {
			var id string
			var pos int64
			if err := rows.Scan(&id, &pos); err != nil {
				_ = rows.Close()
				return dbErr("upsert agents", err)
			}
			i, ok := index[id]
			if !ok {
				_ = rows.Close()
				return fmt.Errorf("sqlite: upsert agents: row %s was not asked for", id)
			}
			changed[i] = true
			written = append(written, pos)
			if len(ls[i].Record.Tags) > 0 {
				withTags = append(withTags, pageTags{Pos: pos, Tags: json.RawMessage(tags[i].(string))})
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return dbErr("upsert agents", err)
		}
		if len(written) == 0 {
			return nil
		}
		list, err := json.Marshal(written)
		if err != nil {
			return fmt.Errorf("sqlite: encode positions: %w", err)
		}
		if _, err := tx.ExecContext(ctx, deletePageTagsSQL, string(list)); err != nil {
			return dbErr("rewrite tags of agents", err)
		}
		if len(withTags) == 0 {
			return nil
		}
		rowTags, err := json.Marshal(withTags)
		if err != nil {
			return fmt.Errorf("sqlite: encode tags: %w", err)
		}
		_, err = tx.ExecContext(ctx, insertPageTagsSQL, string(rowTags))
		return dbErr("rewrite tags of agents", err)
	})
}
