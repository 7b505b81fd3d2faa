adlink.search("printer", {loc: "use_geo", lang: "use_locale", "ctx.dist": "low", fields: "price"}).then(JSON.stringify)
