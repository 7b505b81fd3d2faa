[...document.querySelectorAll("a.adlink-intext")].map(a => a.textContent)
