(text) => adlink.matchText(text).then(r => r.link.length)
