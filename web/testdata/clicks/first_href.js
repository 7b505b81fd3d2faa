document.querySelector('a.adlink-intext').href
