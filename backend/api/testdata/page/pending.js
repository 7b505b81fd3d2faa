/**/cb({
  "http_status": 202,
  "link": [],
  "status": "pending",
  "retry_after_ms": 100
});
