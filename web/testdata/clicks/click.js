(() => { const a = document.querySelector('a.adlink-intext'); a.removeAttribute('target'); a.click(); return true; })()
