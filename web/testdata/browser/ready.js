new Promise(r => { const w = () => window.adlink ? adlink.ready.then(x => r({source: x.source, links: x.links.length})) : setTimeout(w, 5); w(); })
