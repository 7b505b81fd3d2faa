(q, dist) => adlink.search(q, {"ctx.dist": dist, fields: "price,logoad_type"}).then(JSON.stringify)
