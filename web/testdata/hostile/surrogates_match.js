adlink.matchText("Das Apple iPhone 15 \uDC00 und gute \uD800Kopfhörer", {title: "\uDBFF"}).then(r => r.link.length)
