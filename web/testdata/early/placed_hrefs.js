// The addresses of the ads the widget placed, in-text and in the box.
Array.from(document.querySelectorAll("a.adlink-intext[data-adlink=intext], aside.adlink-box[data-adlink=box] a.adlink-ad"), a => a.href)
