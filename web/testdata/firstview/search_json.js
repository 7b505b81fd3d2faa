(q, fields) => adlink.search(q, {loc: "de", lang: "de", fields: fields}).then(JSON.stringify)
