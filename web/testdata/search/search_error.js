(q, options) => adlink.search(q, options).then(() => "no error", (e) => e.message)
