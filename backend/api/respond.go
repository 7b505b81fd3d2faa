package api

import (
	"net/http"
	"strconv"
	"sync"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 256<<10 {
		return // let a rare huge response go rather than pin it
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// respond writes body, a complete JSON object, with status. With a callback
// it writes JSONP instead: always 200, since a script tag cannot read the
// status, with the status copied into the object as "http_status":
//
//	/**/cb({"http_status":200,"link":[...]});
//
// The "/**/" prefix defeats content-sniffing attacks such as Rosetta Flash.
// Every response goes out the same way: body complete in a buffer, then
// headers, then WriteHeader, then the body.
func respond(w http.ResponseWriter, status int, body []byte, callback string) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if callback == "" {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write(body)
		return
	}
	buf := getBuf()
	defer putBuf(buf)
	b := append((*buf)[:0], "/**/"...)
	b = append(b, callback...)
	b = append(b, `({"http_status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	if rest := body[1:]; len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	b = append(b, body[1:]...)
	b = append(b, ");"...)
	*buf = b
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Content-Disposition", "attachment; filename=f.txt")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}
