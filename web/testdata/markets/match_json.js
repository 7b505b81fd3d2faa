(text, options) => adlink.matchText(text, options).then(JSON.stringify)
