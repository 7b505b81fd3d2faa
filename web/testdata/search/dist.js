document.getElementById('dist').value
